import {
  DEFAULT_CONFIRMATION_TIMEOUT_MS,
  DEFAULT_GAS_BUMP_PERCENT,
  DEFAULT_GAS_PRICE_MAXIMUM_WEI,
  DEFAULT_MAX_GAS_BUMPS,
  DEFAULT_MIN_GAS_WEI,
  DEFAULT_RELAYER_FEE_THRESHOLD_PERCENT,
  ZERO_ADDRESS,
  defaultSubgraphSyncBuffer,
  recommendedConfirmations,
} from "./defaults";
import type { KnownDeployment } from "./deployments";
import { isRecord } from "./json-shapes";
import type { ParsedChain } from "./parsed-config";
import type { ChainConfig } from "./types";

/** Each chain with its defaults; a chain the schema found no object for, or no chain id, is skipped. */
export function buildChains(
  chains: Record<string, ParsedChain> | undefined,
  deployments: ReadonlyMap<number, KnownDeployment>,
  problems: string[],
  warnings: string[],
): Record<string, ChainConfig> {
  const out: Record<string, ChainConfig> = {};
  for (const [key, chain] of Object.entries(isRecord(chains) ? chains : {})) {
    if (!isRecord(chain) || !/^[0-9]+$/.test(key)) {
      continue;
    }
    const chainId = Number(key);
    const known = deployments.get(chainId) ?? {};
    const transactionManagerAddress = chain.transactionManagerAddress ?? known.transactionManagerAddress;
    if (!transactionManagerAddress) {
      problems.push(
        `chainConfig.${key}.transactionManagerAddress: no TransactionManager deployment is known for chain ${key}; set the address`,
      );
      continue;
    }
    const recommended = recommendedConfirmations(chainId);
    if (typeof chain.confirmations === "number" && chain.confirmations < recommended) {
      warnings.push(
        `chainConfig.${key}.confirmations: ${chain.confirmations} is below the recommended ${recommended} for chain ${key}`,
      );
    }
    out[key] = {
      chainId,
      providers: chain.providers,
      subgraph: chain.subgraph,
      analyticsSubgraph: chain.analyticsSubgraph,
      transactionManagerAddress,
      priceOracleAddress: chain.priceOracleAddress ?? known.priceOracleAddress,
      multicallAddress: chain.multicallAddress ?? known.multicallAddress,
      confirmations: chain.confirmations ?? recommended,
      minGas: chain.minGas ?? DEFAULT_MIN_GAS_WEI,
      gasStations: chain.gasStations,
      allowRelay: chain.allowRelay,
      allowUnpricedRelay: chain.allowUnpricedRelay,
      relayerFeeThreshold: chain.relayerFeeThreshold ?? DEFAULT_RELAYER_FEE_THRESHOLD_PERCENT,
      subgraphSyncBuffer: chain.subgraphSyncBuffer ?? defaultSubgraphSyncBuffer(chainId),
      defaultInitialGasPrice: chain.defaultInitialGasPrice,
      routerContractRelayerAsset: chain.routerContractRelayerAsset ?? ZERO_ADDRESS,
      gasPriceMaximum: chain.gasPriceMaximum ?? DEFAULT_GAS_PRICE_MAXIMUM_WEI,
      gasBumpPercent: chain.gasBumpPercent ?? DEFAULT_GAS_BUMP_PERCENT,
      maxGasBumps: chain.maxGasBumps ?? DEFAULT_MAX_GAS_BUMPS,
      confirmationTimeoutMs: chain.confirmationTimeoutMs ?? DEFAULT_CONFIRMATION_TIMEOUT_MS,
      nativeMainnetEquivalent: chain.nativeMainnetEquivalent,
      metricsSlot: chain.metricsSlot,
    };
  }
  return out;
}

/** Two chains pinned to one metrics slot would have their processes fight over one port. */
export function checkMetricsSlots(chains: Record<string, ParsedChain> | undefined, problems: string[]): void {
  const owner = new Map<number, string>();
  for (const [key, chain] of Object.entries(isRecord(chains) ? chains : {})) {
    const slot = isRecord(chain) ? chain.metricsSlot : undefined;
    if (typeof slot !== "number") {
      continue;
    }
    const other = owner.get(slot);
    if (other !== undefined) {
      problems.push(`chainConfig.${key}.metricsSlot: ${slot} is also chain ${other}'s; each chain needs its own slot`);
    } else {
      owner.set(slot, key);
    }
  }
}

/** docs/config.md (top-level keys): gas reimbursement prices are read on chain 1, so it needs a provider even with no pool there. */
export function checkChainOne(chains: Record<string, ParsedChain> | undefined, problems: string[]): void {
  if (isRecord(chains) && !Object.hasOwn(chains, "1")) {
    problems.push(
      "chainConfig.1: chain 1 must be configured with at least one provider (gas prices are read on chain 1)",
    );
  }
}

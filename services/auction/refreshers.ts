import type { ChainProvider } from "../../shared/chain/chain-provider";
import { decodeErc20Decimals, encodeErc20Decimals } from "../../shared/chain/contracts";
import { readOraclePrice } from "../../shared/chain/oracle-price";
import { getGasPrice } from "../../shared/chain/gas-price";
import type { RouterConfig } from "../../shared/config/types";
import { errorMessage } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import { feeCap } from "../../shared/protocol/gas";
import { assetKey, type PriceSources } from "../../shared/protocol/price-sources";
import type { FeeCache } from "./fee-cache";
import { abortableDelay } from "../../shared/timing";

/** What one chain's refresher keeps fresh in the fee cache. */
export interface ChainRefreshPlan {
  readonly chainId: number;
  /** Lowercase addresses to price on this chain's oracle. */
  readonly priceAddresses: readonly string[];
  readonly oracle?: string;
  readonly gasPrice: boolean;
  /** Checksummed ERC20s whose decimals to read (once). */
  readonly decimalsOf: readonly string[];
}

export function refreshPlans(config: RouterConfig, sources: PriceSources): ChainRefreshPlan[] {
  const targets = sources.targets();
  const gasChains = new Set(sources.gasPriceChains());
  const pools = sources.poolAssets();
  const chainIds = new Set<number>([...targets.keys(), ...gasChains, ...pools.keys()]);
  return [...chainIds]
    .filter((chainId) => config.chainConfig[String(chainId)] !== undefined)
    .map((chainId) => ({
      chainId,
      priceAddresses: targets.get(chainId) ?? [],
      oracle: sources.oracle(chainId),
      gasPrice: gasChains.has(chainId),
      decimalsOf: pools.get(chainId) ?? [],
    }));
}

export interface RefresherDeps {
  readonly config: RouterConfig;
  readonly provider: ChainProvider;
  readonly cache: FeeCache;
  readonly logger: Logger;
  readonly nowMs: () => number;
  /** One throttled log per failing value, so an RPC outage logs once a minute per value, not every pass. */
  readonly failureLogs?: Map<string, (err: Error) => void>;
}

/**
 * One pass over a chain's values, each read on its own: one failing read (a token without `decimals()`, an
 * oracle revert) leaves that value to age out, never the others. Returns how many reads failed.
 */
export async function refreshChainOnce(
  plan: ChainRefreshPlan,
  deps: RefresherDeps,
  signal?: AbortSignal,
): Promise<number> {
  const { cache, provider } = deps;
  let failures = 0;
  const attempt = async (what: string, fn: () => Promise<void>): Promise<void> => {
    if (signal?.aborted) {
      return;
    }
    try {
      await fn();
    } catch (err) {
      failures += 1;
      const key = `${plan.chainId}:${what}`;
      let log = deps.failureLogs?.get(key);
      if (log === undefined) {
        log = throttledErrorLog(deps.logger, "auction cache refresh failed", {
          at: "auction.refresh",
          chainId: plan.chainId,
          what,
        });
        deps.failureLogs?.set(key, log);
      }
      log(err instanceof Error ? err : new Error(errorMessage(err)));
    }
  };
  if (plan.gasPrice) {
    await attempt("gas price", async () => {
      const chain = deps.config.chainConfig[String(plan.chainId)];
      const fee = await getGasPrice(chain, { provider, logger: deps.logger });
      cache.gasPrices.set(plan.chainId, { value: feeCap(fee), atMs: deps.nowMs() });
    });
  }
  const oracle = plan.oracle;
  if (oracle !== undefined) {
    for (const address of plan.priceAddresses) {
      await attempt(`price ${address}`, async () => {
        const price = await readOraclePrice(provider, oracle, address);
        cache.prices.set(assetKey(plan.chainId, address), { value: price, atMs: deps.nowMs() });
      });
    }
  }
  for (const assetId of plan.decimalsOf) {
    const key = assetKey(plan.chainId, assetId);
    if (cache.decimals.has(key)) {
      continue;
    }
    await attempt(`decimals ${assetId}`, async () => {
      const decimals = decodeErc20Decimals(await provider.call({ to: assetId, data: encodeErc20Decimals() }));
      cache.decimals.set(key, decimals);
    });
  }
  return failures;
}

/**
 * The chain's refresher: a sequential loop (a pass never overlaps the next), abortable between reads and
 * during the pause. Resolves once `signal` aborts.
 */
export async function runRefresher(
  plan: ChainRefreshPlan,
  deps: RefresherDeps,
  intervalMs: number,
  signal: AbortSignal,
): Promise<void> {
  let delayMs = intervalMs;
  while (!signal.aborted) {
    const failures = await refreshChainOnce(plan, deps, signal);
    // A failed read can leave a value cold, and a cold value refuses bids: retry soon, backing off to the interval.
    delayMs =
      failures === 0 ? intervalMs : Math.min(intervalMs, delayMs >= intervalMs ? REFRESH_RETRY_MIN_MS : delayMs * 2);
    await abortableDelay(delayMs, signal);
  }
}

/** First retry after a refresh pass with failures; doubles up to the refresh interval. */
export const REFRESH_RETRY_MIN_MS = 1_000;

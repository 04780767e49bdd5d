import { ZeroAddress, type BlockTag } from "ethers";
import type { RouterConfig } from "../config/types";
import { createLogger, type Logger } from "../logging/create-logger";
import { createChainProvider, type ChainProvider } from "./chain-provider";
import {
  decodeErc20BalanceOf,
  decodeErc20Decimals,
  decodeRouterBalances,
  decodeVariantTransactionData,
  encodeErc20BalanceOf,
  encodeErc20Decimals,
  encodeRouterBalances,
  encodeVariantTransactionData,
} from "./contracts";

/** (chainId, assetId) → the router's unlocked liquidity in the TransactionManager, base units. */
export type RouterBalanceReader = (chainId: number, assetId: string) => Promise<bigint>;

export interface RouterBalanceReaderParams {
  readonly config: RouterConfig;
  /** The address the TransactionManager credits: the Router contract in router-contract mode, else the signer. */
  readonly routerAddress: string;
  /** Per-chain providers to reuse; missing chains get their own, built lazily from the config. */
  readonly providers?: ReadonlyMap<number, ChainProvider>;
  /** For provider fallback warnings; silent when absent. */
  readonly logger?: Logger;
}

/**
 * `TransactionManager.routerBalances(routerAddress, assetId)` on the chain's configured TransactionManager.
 * A chain missing from the config is a caller bug and throws a RangeError.
 */
export function createRouterBalanceReader(params: RouterBalanceReaderParams): RouterBalanceReader {
  const providerFor = createProviderLookup(params.config, params.providers, params.logger);
  return async (chainId, assetId) => {
    const chain = params.config.chainConfig[String(chainId)];
    if (!chain) {
      throw new RangeError(`chain ${chainId} is not in chainConfig`);
    }
    const data = await providerFor(chainId).call({
      to: chain.transactionManagerAddress,
      data: encodeRouterBalances(params.routerAddress, assetId),
    });
    return decodeRouterBalances(data);
  };
}

/** `routerBalances(router, asset)` at one block: reconciliation reads both ends of a range at confirmed blocks. */
export async function readRouterBalanceAt(
  provider: Pick<ChainProvider, "call">,
  transactionManagerAddress: string,
  routerAddress: string,
  assetId: string,
  blockTag: BlockTag,
): Promise<bigint> {
  const data = await provider.call(
    { to: transactionManagerAddress, data: encodeRouterBalances(routerAddress, assetId) },
    blockTag,
  );
  return decodeRouterBalances(data);
}

/** `variantTransactionData(digest)`: zero before prepare; the hash of (amount, expiry, 0) after fulfill/cancel. */
export async function readVariantTransactionData(
  provider: Pick<ChainProvider, "call">,
  transactionManagerAddress: string,
  invariantDigest: string,
  blockTag?: BlockTag,
): Promise<string> {
  const data = await provider.call(
    {
      to: transactionManagerAddress,
      data: encodeVariantTransactionData(invariantDigest),
    },
    blockTag,
  );
  return decodeVariantTransactionData(data);
}

/** Native balance for the zero address, else ERC20 `balanceOf`. */
export async function readAssetBalance(
  provider: Pick<ChainProvider, "call" | "getBalance">,
  assetId: string,
  owner: string,
): Promise<bigint> {
  if (assetId.toLowerCase() === ZeroAddress) {
    return provider.getBalance(owner);
  }
  return decodeErc20BalanceOf(await provider.call({ to: assetId, data: encodeErc20BalanceOf(owner) }));
}

export type DecimalsReader = (assetId: string) => Promise<number>;

/**
 * ERC20 `decimals()` (18 for the native asset), cached per asset for the reader's lifetime: a token's
 * decimals never change. A failed read is not cached.
 */
export function createDecimalsReader(provider: Pick<ChainProvider, "call">): DecimalsReader {
  const cache = new Map<string, Promise<number>>();
  return (assetId) => {
    const key = assetId.toLowerCase();
    if (key === ZeroAddress) {
      return Promise.resolve(18);
    }
    let cached = cache.get(key);
    if (!cached) {
      cached = provider.call({ to: assetId, data: encodeErc20Decimals() }).then(decodeErc20Decimals);
      cached.catch(() => cache.delete(key));
      cache.set(key, cached);
    }
    return cached;
  };
}

function createProviderLookup(
  config: RouterConfig,
  given: ReadonlyMap<number, ChainProvider> | undefined,
  logger: Logger | undefined,
): (chainId: number) => ChainProvider {
  const built = new Map<number, ChainProvider>();
  const log = logger ?? createLogger({ level: "silent", service: "chain" });
  return (chainId) => {
    const existing = given?.get(chainId) ?? built.get(chainId);
    if (existing) {
      return existing;
    }
    const chain = config.chainConfig[String(chainId)];
    if (!chain) {
      throw new RangeError(`chain ${chainId} is not in chainConfig`);
    }
    const provider = createChainProvider({ chainId, urls: chain.providers, logger: log });
    built.set(chainId, provider);
    return provider;
  };
}

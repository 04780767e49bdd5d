import { ZeroAddress } from "ethers";
import { gasFeeInToken } from "../../shared/protocol/gas-fee";
import { OPTIMISM_CHAIN_ID, gasLimitOf, gasLimitsFor, l1GasLimitOf } from "../../shared/protocol/gas-limits";
import type { FeeEstimator, GasFeeParams } from "./context";
import { assetKey, type PriceSources } from "./price-sources";

/** A value and when it was read (ms). */
export interface Stamped {
  readonly value: bigint;
  readonly atMs: number;
}

/**
 * The in-process values the auction prices with, written only by the refreshers (refreshers.ts) and read
 * on the request path without I/O. Keys: prices by `chainId:address` of the oracle read, gas prices by chain.
 */
export interface FeeCache {
  readonly prices: Map<string, Stamped>;
  readonly gasPrices: Map<number, Stamped>;
  /** Token decimals never change: no timestamp. */
  readonly decimals: Map<string, number>;
}

export function createFeeCache(): FeeCache {
  return { prices: new Map(), gasPrices: new Map(), decimals: new Map() };
}

export interface FeeEstimatorParams {
  readonly cache: FeeCache;
  readonly sources: PriceSources;
  /** Prices and gas prices older than this are cold: the request is refused rather than mispriced. */
  readonly maxAgeMs: number;
  readonly nowMs: () => number;
}

/**
 * PROTOCOL.md §2.4 from the caches: oracle prices (fee 0 when the chosen chain has no oracle), the chain's
 * gas price (fee cap), the built-in gas limits, and Optimism's L1 term priced with chain 1's gas price.
 * `undefined` when any value it needs is missing or too old.
 */
export function createFeeEstimator(p: FeeEstimatorParams): FeeEstimator {
  const { cache, sources } = p;
  const fresh = (entry: Stamped | undefined, nowMs: number): bigint | undefined =>
    entry !== undefined && nowMs - entry.atMs <= p.maxAgeMs ? entry.value : undefined;

  const gasFeeInAsset = (params: GasFeeParams): bigint | undefined => {
    const token = sources.asset(params.chainId, params.assetId);
    const native = sources.native(params.chainId);
    if (sources.oracle(token.chainId) === undefined || sources.oracle(native.chainId) === undefined) {
      return 0n;
    }
    const nowMs = p.nowMs();
    const tokenPrice = fresh(cache.prices.get(assetKey(token.chainId, token.address)), nowMs);
    const nativePrice = fresh(cache.prices.get(assetKey(native.chainId, native.address)), nowMs);
    const gasPrice = fresh(cache.gasPrices.get(params.chainId), nowMs);
    if (tokenPrice === undefined || nativePrice === undefined || gasPrice === undefined) {
      return undefined;
    }
    const limits = gasLimitsFor(params.chainId);
    let l1: { gasPrice: bigint; gasLimit: bigint } | undefined;
    if (params.chainId === OPTIMISM_CHAIN_ID) {
      const l1GasPrice = fresh(cache.gasPrices.get(1), nowMs);
      if (l1GasPrice === undefined) {
        return undefined;
      }
      l1 = { gasPrice: l1GasPrice, gasLimit: l1GasLimitOf(limits, params.method) };
    }
    return gasFeeInToken({
      gasPrice,
      gasLimit: gasLimitOf(limits, params.method) + (params.extraGas ?? 0n),
      gasPriceFactor: limits.gasPriceFactor,
      nativePrice,
      tokenPrice,
      decimals: params.decimals,
      l1,
    });
  };

  return {
    gasFeeInAsset,
    decimals: (chainId, assetId) =>
      assetId.toLowerCase() === ZeroAddress ? 18 : cache.decimals.get(assetKey(chainId, assetId)),
  };
}

import { ZeroAddress } from "ethers";
import { gasFeeInToken } from "../../shared/protocol/gas-fee";
import {
  OPTIMISM_CHAIN_ID,
  gasLimitOf,
  gasLimitsFor,
  l1GasLimitOf,
  type GasLimits,
} from "../../shared/protocol/gas-limits";
import type { FeeEstimator, GasFeeParams } from "./context";
import { assetKey, type PriceSources } from "../../shared/protocol/price-sources";

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

/** Bounds the per-asset plans and memos: pool assets in practice, but a relay may name any asset. */
const MAX_TARGETS = 1_024;

/** What a fee in one (chain, asset) needs, resolved once: sources, cache keys, gas limits. */
interface FeeTarget {
  /** No oracle on the token's or the native price's chain: the fee is 0. */
  readonly free: boolean;
  /** Free, and the token is not priced at the native token's source (where the cost is the gas itself). */
  readonly unpriced: boolean;
  readonly tokenKey: string;
  readonly nativeKey: string;
  readonly limits: GasLimits;
  /** The last fee per `method:decimals` (no extra gas), valid while the cache holds the same entries. */
  readonly memos: Map<string, FeeMemo>;
}

interface FeeMemo {
  readonly token: Stamped;
  readonly native: Stamped;
  readonly gas: Stamped;
  readonly l1Gas: Stamped | undefined;
  readonly fee: bigint;
}

/**
 * docs/protocol.md#gas-fee from the caches: oracle prices (fee 0 when the chosen chain has no oracle), the chain's
 * gas price (fee cap), the built-in gas limits, and Optimism's L1 term priced with chain 1's gas price.
 * `undefined` when any value it needs is missing or too old. The refreshers replace a cache entry on each
 * read, so a fee computed from the same entries is reused (two per bid, the same until the next refresh).
 */
export function createFeeEstimator(p: FeeEstimatorParams): FeeEstimator {
  const { cache, sources } = p;
  const fresh = (entry: Stamped | undefined, nowMs: number): entry is Stamped =>
    entry !== undefined && nowMs - entry.atMs <= p.maxAgeMs;

  const targets = new Map<string, FeeTarget>();
  const targetOf = (chainId: number, assetId: string): FeeTarget => {
    const key = assetKey(chainId, assetId);
    let target = targets.get(key);
    if (target === undefined) {
      const token = sources.asset(chainId, assetId);
      const native = sources.native(chainId);
      const free = sources.oracle(token.chainId) === undefined || sources.oracle(native.chainId) === undefined;
      const tokenKey = assetKey(token.chainId, token.address);
      const nativeKey = assetKey(native.chainId, native.address);
      target = {
        free,
        unpriced: free && tokenKey !== nativeKey,
        tokenKey,
        nativeKey,
        limits: gasLimitsFor(chainId),
        memos: new Map(),
      };
      if (targets.size >= MAX_TARGETS) targets.clear();
      targets.set(key, target);
    }
    return target;
  };

  const gasFeeInAsset = (params: GasFeeParams): bigint | undefined => {
    const target = targetOf(params.chainId, params.assetId);
    if (target.free) {
      return 0n;
    }
    const nowMs = p.nowMs();
    const token = cache.prices.get(target.tokenKey);
    const native = cache.prices.get(target.nativeKey);
    const gas = cache.gasPrices.get(params.chainId);
    if (!fresh(token, nowMs) || !fresh(native, nowMs) || !fresh(gas, nowMs)) {
      return undefined;
    }
    let l1Gas: Stamped | undefined;
    if (params.chainId === OPTIMISM_CHAIN_ID) {
      l1Gas = cache.gasPrices.get(1);
      if (!fresh(l1Gas, nowMs)) {
        return undefined;
      }
    }
    // A relay's call-data gas differs per request: only the auction's plain fees are memoised.
    const memoKey =
      params.extraGas === undefined || params.extraGas === 0n ? `${params.method}:${params.decimals}` : "";
    const memo = memoKey === "" ? undefined : target.memos.get(memoKey);
    if (memo?.token === token && memo.native === native && memo.gas === gas && memo.l1Gas === l1Gas) {
      return memo.fee;
    }
    const fee = gasFeeInToken({
      gasPrice: gas.value,
      gasLimit: gasLimitOf(target.limits, params.method) + (params.extraGas ?? 0n),
      gasPriceFactor: target.limits.gasPriceFactor,
      nativePrice: native.value,
      tokenPrice: token.value,
      decimals: params.decimals,
      l1:
        l1Gas === undefined
          ? undefined
          : { gasPrice: l1Gas.value, gasLimit: l1GasLimitOf(target.limits, params.method) },
    });
    if (memoKey !== "") {
      target.memos.set(memoKey, { token, native, gas, l1Gas, fee });
    }
    return fee;
  };

  const usdValue = (chainId: number, assetId: string, amount: bigint, decimals: number): number | undefined => {
    const source = sources.asset(chainId, assetId);
    if (sources.oracle(source.chainId) === undefined) return undefined;
    const price = cache.prices.get(assetKey(source.chainId, source.address));
    if (!fresh(price, p.nowMs()) || price.value === 0n) return undefined;
    // The oracle's price is USD with 18 decimals per whole token.
    return Number((amount * price.value) / 10n ** BigInt(decimals)) / 1e18;
  };

  return {
    gasFeeInAsset,
    unpriced: (chainId, assetId) => targetOf(chainId, assetId).unpriced,
    usdValue,
    decimals: (chainId, assetId) =>
      assetId.toLowerCase() === ZeroAddress ? 18 : cache.decimals.get(assetKey(chainId, assetId)),
  };
}

import type { Redis } from "ioredis";
import { gasBalanceKey, routerBalanceKey } from "../coordination/keys";
import { fenceArgsOf, fencedOut, type FenceSource } from "../coordination/lease";
import { FENCED_HSET } from "../redis/common-scripts";

/**
 * Balances the poller refreshes so other processes (the auction) read Redis instead of calling RPCs:
 * - `balance:<chainId>:<assetId lowercase>`: the router's unlocked TransactionManager liquidity;
 * - `gas:<chainId>`: the signer's native balance (it pays gas, also in router-contract mode).
 * Each is a hash `{amount: decimal string, updatedAtMs}`; readers decide how old a value may be.
 */
export interface StoredAmount {
  readonly amount: bigint;
  readonly updatedAtMs: number;
}

export interface BalanceStore {
  setRouterBalance(chainId: number, assetId: string, amount: bigint, updatedAtMs?: number): Promise<void>;
  getRouterBalance(chainId: number, assetId: string): Promise<StoredAmount | undefined>;
  setGasBalance(chainId: number, amount: bigint, updatedAtMs?: number): Promise<void>;
  getGasBalance(chainId: number): Promise<StoredAmount | undefined>;
}

/**
 * `fence` (the chain's poller lease): every write checks it in the same script, so a poller paused past its lease
 * cannot overwrite a newer balance with an old one. Without it, writes are unfenced (tests, tools).
 */
export function createBalanceStore(redis: Redis, prefix: string, fence?: FenceSource): BalanceStore {
  const write = async (key: string, amount: bigint, updatedAtMs = Date.now()): Promise<void> => {
    if (amount < 0n) {
      throw new RangeError(`balance must not be negative (${key})`);
    }
    // One HSET: a reader never sees a new amount with an old timestamp.
    const f = fenceArgsOf(fence, key, "balance");
    const written = await FENCED_HSET.run(redis, {
      keys: { target: key, lease: f.key },
      args: { fenceValue: f.value },
      restArgs: ["amount", amount.toString(), "updatedAtMs", String(updatedAtMs)],
    });
    if (!written) {
      throw fencedOut(fence, "balance");
    }
  };
  const read = async (key: string): Promise<StoredAmount | undefined> => {
    const { amount, updatedAtMs } = await redis.hgetall(key);
    if (amount === undefined || updatedAtMs === undefined || !/^[0-9]+$/.test(amount)) {
      return undefined;
    }
    return { amount: BigInt(amount), updatedAtMs: Number(updatedAtMs) };
  };
  return {
    setRouterBalance: (chainId, assetId, amount, updatedAtMs) =>
      write(routerBalanceKey(prefix, chainId, assetId), amount, updatedAtMs),
    getRouterBalance: (chainId, assetId) => read(routerBalanceKey(prefix, chainId, assetId)),
    setGasBalance: (chainId, amount, updatedAtMs) => write(gasBalanceKey(prefix, chainId), amount, updatedAtMs),
    getGasBalance: (chainId) => read(gasBalanceKey(prefix, chainId)),
  };
}

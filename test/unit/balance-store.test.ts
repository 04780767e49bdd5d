import type { Redis } from "ioredis";
import { gasBalanceKey, routerBalanceKey } from "../../shared/coordination/keys";
import { createBalanceStore, type BalanceStore } from "../../shared/transfers/balance-store";
import { useRedis } from "../harness/redis";

/**
 * The balance store writes through a fenced Lua script (the poller's lease), so it runs against a real
 * redis-server: ioredis-mock's Lua is not Redis's.
 */

const PREFIX = "unit";
const ASSET = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
/** Above 2^53: must survive as a decimal string, not a float. */
const BIG = 123_456_789_012_345_678_901_234_567n;

describe("balance store (redis-server)", () => {
  const suite = useRedis();
  let redis: Redis;
  let store: BalanceStore;

  beforeEach(async () => {
    redis = suite.redis;
    await redis.flushall();
    store = createBalanceStore(redis, PREFIX);
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  it("round-trips a router balance exactly, under the lowercase asset key", async () => {
    await store.setRouterBalance(1, ASSET, BIG, 1_700_000_000_000);
    expect(await store.getRouterBalance(1, ASSET.toLowerCase())).toEqual({
      amount: BIG,
      updatedAtMs: 1_700_000_000_000,
    });
    expect(await redis.hgetall(routerBalanceKey(PREFIX, 1, ASSET))).toEqual({
      amount: BIG.toString(),
      updatedAtMs: "1700000000000",
    });
    expect(await redis.keys("*")).toEqual([`${PREFIX}:router:balance:1:${ASSET.toLowerCase()}`]);
  });

  it("keeps chains, assets and the gas balance apart", async () => {
    await store.setRouterBalance(1, ASSET, 10n, 1);
    await store.setRouterBalance(56, ASSET, 20n, 2);
    await store.setGasBalance(1, 30n, 3);
    expect(await store.getRouterBalance(1, ASSET)).toEqual({ amount: 10n, updatedAtMs: 1 });
    expect(await store.getRouterBalance(56, ASSET)).toEqual({ amount: 20n, updatedAtMs: 2 });
    expect(await store.getGasBalance(1)).toEqual({ amount: 30n, updatedAtMs: 3 });
    expect(await store.getGasBalance(56)).toBeUndefined();
    expect(await store.getRouterBalance(1, "0x0000000000000000000000000000000000000000")).toBeUndefined();
  });

  it("overwrites amount and timestamp together, and stamps Date.now() by default", async () => {
    jest.spyOn(Date, "now").mockReturnValue(5_000);
    await store.setGasBalance(137, 7n, 1_000);
    await store.setGasBalance(137, 0n);
    expect(await store.getGasBalance(137)).toEqual({ amount: 0n, updatedAtMs: 5_000 });
  });

  it("rejects a negative amount without writing anything", async () => {
    await expect(store.setRouterBalance(1, ASSET, -1n)).rejects.toThrow(RangeError);
    await expect(store.setGasBalance(1, -1n)).rejects.toThrow(RangeError);
    expect(await redis.keys("*")).toEqual([]);
  });

  it.each([
    ["a non-decimal amount", { amount: "1e18", updatedAtMs: "1" }],
    ["a negative amount", { amount: "-5", updatedAtMs: "1" }],
    ["no timestamp", { amount: "5" }],
    ["no amount", { updatedAtMs: "1" }],
  ])("reads %s as no value", async (_label, hash) => {
    await redis.hset(gasBalanceKey(PREFIX, 10), hash);
    expect(await store.getGasBalance(10)).toBeUndefined();
  });
});

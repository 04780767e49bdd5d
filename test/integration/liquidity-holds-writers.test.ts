import { createLiquidityHolds, type LiquidityHolds } from "../../services/submitter/liquidity-in-flight";
import { createTxRecordStore } from "../../services/submitter/send/tx-record";
import { useRedis } from "../harness/redis";

/**
 * The holds' compare-and-set against a real Redis. A process decides against its mirror of the
 * hash (one read per term, no whole-hash read per change); a second writer on the same hash (the cross-process
 * case the fence and the version keep safe) makes it read again, never hold twice.
 */
describe("liquidity holds: writers", () => {
  const r = useRedis();
  const ASSET = "0x00000000000000000000000000000000000000aa";
  let n = 0;
  const holdsOn = (prefix: string): LiquidityHolds =>
    createLiquidityHolds({
      redis: r.redis,
      prefix,
      chainId: 1337,
      signerAddress: "0xrouter",
      records: createTxRecordStore({ redis: r.redis, prefix, chainId: 1337 }),
    });
  const check = (holds: LiquidityHolds, jobId: string, balance: bigint): Promise<boolean> =>
    holds
      .forJob(jobId)
      .checkAndHold({ assetId: ASSET, amount: 10n, readBalance: async () => ({ balance, block: 5 }) })
      .then((c) => c.ok);
  const calls = async (command: string): Promise<number> => {
    const stats = await r.redis.info("commandstats");
    return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  };

  it("60 concurrent checks of one process: exactly what the balance covers is held, with one read of the hash", async () => {
    const holds = holdsOn(`w${(n += 1)}`);
    const readsBefore = await calls("hgetall");
    const passed = await Promise.all(Array.from({ length: 60 }, (_, i) => check(holds, `job-${i}`, 255n)));
    expect(passed.filter(Boolean)).toHaveLength(25);
    expect(await calls("hgetall")).toBe(readsBefore + 1);
    const held = await holds.list();
    expect(held).toHaveLength(25);
    expect(held.reduce((sum, h) => sum + BigInt(h.amount), 0n)).toBe(250n);
  });

  it("two writers on one hash, checking at once: together they hold no more than the balance", async () => {
    const prefix = `w${(n += 1)}`;
    const [a, b] = [holdsOn(prefix), holdsOn(prefix)];
    const readsBefore = await calls("hgetall");
    const passed = await Promise.all(
      Array.from({ length: 40 }, (_, i) => check(i % 2 === 0 ? a : b, `job-${i}`, 255n)),
    );
    expect(passed.filter(Boolean)).toHaveLength(25);
    // Their writes did collide (one read each would mean they never did): each refused write read the hash again.
    expect(await calls("hgetall")).toBeGreaterThan(readsBefore + 2);
    const held = await a.list();
    expect(held).toHaveLength(25);
    // Each writer sees the other's holds: a later check on either is refused.
    await expect(check(a, "late-a", 255n)).resolves.toBe(false);
    await expect(check(b, "late-b", 255n)).resolves.toBe(false);
  });

  it("a hold marked mined stops counting once a balance read at its block is checked", async () => {
    const holds = holdsOn(`w${(n += 1)}`);
    await expect(check(holds, "first", 10n)).resolves.toBe(true);
    await expect(check(holds, "second", 10n)).resolves.toBe(false);
    await holds.forJob("first").markMined(5);
    // The balance at block 5 shows the mined withdrawal (10 less): the other 10 count once, not twice.
    await expect(check(holds, "second", 10n)).resolves.toBe(true);
    expect((await holds.list()).map((h) => h.jobId)).toEqual(["second"]);
  });
});

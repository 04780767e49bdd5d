import { getAddress, hexlify, randomBytes } from "ethers";
import { bidReservationExpiryKey } from "../../shared/coordination/keys";
import { expandIncludes } from "../../shared/redis/script-loader";
import {
  LAPSE_STEP_MS,
  MAX_BIDS_PER_TRANSFER,
  createBidReservations,
  promiseLapseMs,
  type BidReservations,
  type ReserveParams,
} from "../../shared/transfers/bid-reservations";
import { createBalanceStore, type BalanceStore } from "../../shared/transfers/balance-store";
import { useRedis } from "../harness/redis";
import { uniquePrefix } from "../harness/prefix";

const MAX = (1n << 256n) - 1n;
const ASSET = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const USER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

const suite = useRedis();

describe("digit-string arithmetic in Lua (real Redis)", () => {
  const op = (name: "dadd" | "dsub" | "dcmp" | "ddiv", a: string, b: string): Promise<string> =>
    suite.redis.eval(
      expandIncludes("digit-math-test.lua", `--- @include "digit-math"\nreturn tostring(${name}(ARGV[1], ARGV[2]))`)
        .lua,
      0,
      a,
      b,
    ) as Promise<string>;

  const samples = (): bigint[] => {
    const out = [
      0n,
      1n,
      9n,
      10n,
      10n ** 14n - 1n,
      10n ** 14n,
      10n ** 14n + 1n,
      10n ** 28n,
      MAX,
      MAX - 1n,
      MAX / 2n,
      (1n << 128n) + 12345n,
    ];
    for (let i = 0; i < 25; i += 1) {
      let v = 0n;
      const digits = 1 + Math.floor(Math.random() * 77);
      for (let d = 0; d < digits; d += 1) v = v * 10n + BigInt(Math.floor(Math.random() * 10));
      out.push(v);
    }
    return out;
  };

  it("adds, subtracts (floored at 0), compares and divides by small integers uint256 values exactly", async () => {
    const values = samples();
    for (const a of values) {
      for (const b of values.slice(0, 12)) {
        expect(await op("dadd", a.toString(), b.toString())).toBe((a + b).toString());
        expect(await op("dsub", a.toString(), b.toString())).toBe((a > b ? a - b : 0n).toString());
        expect(await op("dcmp", a.toString(), b.toString())).toBe(String(a < b ? -1 : a > b ? 1 : 0));
      }
      for (const d of [1n, 2n, 3n, 7n, 64n]) {
        expect(await op("ddiv", a.toString(), d.toString())).toBe((a / d).toString());
      }
    }
  });
});

describe("bid reservations", () => {
  let prefix: string;
  let store: BidReservations;
  let balances: BalanceStore;
  const NOW = 1_800_000_000_000;

  const params = (p: Partial<ReserveParams> = {}): ReserveParams => ({
    sendingChainId: 1337,
    sendingAssetId: ASSET,
    receivingChainId: 1338,
    receivingAssetId: ASSET,
    transferKey: `0x${Math.random().toString(16).slice(2).padEnd(64, "0")}-${USER}`.toLowerCase(),
    amount: 100n,
    nowMs: NOW,
    untilMs: NOW + 300_000,
    maxAgeMs: 60_000,
    rateLimitMs: 0,
    minGasSending: 10n,
    minGasReceiving: 10n,
    commit: true,
    ...p,
  });

  beforeEach(async () => {
    prefix = uniquePrefix();
    store = createBidReservations(suite.redis, prefix);
    balances = createBalanceStore(suite.redis, prefix);
    await balances.setRouterBalance(1338, ASSET, 1000n, NOW);
    await balances.setGasBalance(1337, 100n, NOW);
    await balances.setGasBalance(1338, 100n, NOW);
  });

  /** A requester nobody has seen: a fresh `user` and transfer, as a swarm that rotates its keys sends. */
  const stranger = (p: Partial<ReserveParams> = {}): ReserveParams => {
    const user = getAddress(hexlify(randomBytes(20)));
    return params({ transferKey: `${hexlify(randomBytes(32))}-${user}`.toLowerCase(), ...p });
  };
  const refreshBalances = async (nowMs: number, liquidity = 1000n): Promise<void> => {
    await balances.setRouterBalance(1338, ASSET, liquidity, nowMs);
    await balances.setGasBalance(1337, 100n, nowMs);
    await balances.setGasBalance(1338, 100n, nowMs);
  };

  it("promises exactly while unprepared bids hold at most half the free liquidity, and refuses beyond it", async () => {
    const codes = [];
    for (let i = 0; i < 6; i += 1) codes.push((await store.reserve(stranger({ amount: 100n }))).code);
    expect(codes).toEqual(Array(6).fill("ok"));
    // 600 promised, over the 500 share: the next bid may take the other half, no more.
    expect((await store.reserve(stranger({ amount: 501n }))).code).toBe("LiquidityUnavailable");
    expect((await store.reserve(stranger({ amount: 400n }))).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(1000n);
    expect((await store.reserve(stranger({ amount: 1001n }))).code).toBe("NotEnoughLiquidity");
  });

  it("is atomic under concurrent reservations", async () => {
    // 600 each: only the first fits next to nothing; every later one meets the 500 share already blocked.
    const results = await Promise.all(Array.from({ length: 40 }, () => store.reserve(stranger({ amount: 600n }))));
    expect(results.filter((r) => r.code === "ok")).toHaveLength(1);
    expect(await store.reservedTotal(1338, ASSET)).toBe(600n);
    // No cap per requester (anyone may name any user): one user's 40 transfers of 70 all fit next to the others'
    // promises, counted up to their share, and the total is exact.
    const own = (): ReserveParams =>
      params({ transferKey: `${hexlify(randomBytes(32))}-${USER}`.toLowerCase(), amount: 70n });
    await store.release(1338, ASSET, (await store.promises(1338, ASSET)).byTransfer.keys().next().value ?? "");
    const mine = await Promise.all(Array.from({ length: 40 }, () => store.reserve(own())));
    expect(mine.filter((r) => r.code === "ok")).toHaveLength(40);
    expect(await store.reservedTotal(1338, ASSET)).toBe(2800n);
  });

  it("handles uint256-sized amounts", async () => {
    await balances.setRouterBalance(1338, ASSET, MAX, NOW);
    expect((await store.reserve(stranger({ amount: MAX - 5n }))).code).toBe("ok");
    // MAX is odd: the share is (MAX - 1) / 2, so (MAX + 1) / 2 is left for a bid.
    expect((await store.reserve(stranger({ amount: (MAX + 1n) / 2n + 1n }))).code).toBe("LiquidityUnavailable");
    expect((await store.reserve(stranger({ amount: (MAX + 1n) / 2n }))).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(MAX - 5n + (MAX + 1n) / 2n);
  });

  it("a swarm of rotating keys that never prepares cannot refuse an honest request of half the free liquidity", async () => {
    // 300 requesters, each with a new key, each asking for as much as it can get (all, then half, then less).
    let now = NOW;
    let swarmOk = 0;
    for (let i = 0; i < 300; i += 1) {
      now += 500;
      if (i % 50 === 0) await refreshBalances(now);
      for (const amount of [1000n, 500n, 250n]) {
        if ((await store.reserve(stranger({ amount, nowMs: now, untilMs: now + 420_000 }))).code === "ok") {
          swarmOk += 1;
          break;
        }
      }
      // The honest requester, asking at any moment of the attack (dry run: every check, nothing recorded).
      const honest = stranger({ amount: 500n, nowMs: now, commit: false });
      expect((await store.reserve(honest)).code).toBe("ok");
      expect((await store.reserve({ ...honest, amount: 501n })).code).toBe("LiquidityUnavailable");
    }
    expect(swarmOk).toBe(300);
    // A hard hold (a prepared transfer) is taken first: then half of what is left.
    const prepared = stranger({ amount: 200n, nowMs: now, untilMs: now + 420_000 });
    expect((await store.reserve(prepared)).code).toBe("ok");
    expect(await store.pin(1338, ASSET, prepared.transferKey, now + 3_600_000, 200n)).toBe(true);
    expect((await store.reserve(stranger({ amount: 400n, nowMs: now, commit: false }))).code).toBe("ok");
    expect((await store.reserve(stranger({ amount: 401n, nowMs: now, commit: false }))).code).toBe(
      "LiquidityUnavailable",
    );
    // Bounded in time too: once the swarm stops, its promises lapse with their bids (bidExpiry + grace).
    now += 420_001;
    await refreshBalances(now);
    expect((await store.reserve(stranger({ amount: 800n, nowMs: now, untilMs: now + 420_000 }))).code).toBe("ok");
    expect(await store.promises(1338, ASSET)).toMatchObject({ total: 1000n, hard: 200n });
  });

  it("a re-request never frees what an earlier unexpired bid promised (the 1,797-of-1,000 report)", async () => {
    // What the router has signed so far, as the requester holds it: [transferKey, amount, untilMs].
    const signed: Array<[string, bigint, number]> = [];
    const bid = async (p: ReserveParams): Promise<string> => {
      const { code } = await store.reserve(p);
      if (code === "ok") signed.push([p.transferKey, p.amount, p.untilMs]);
      return code;
    };
    /** Per transfer, the largest bid still valid at `nowMs`: what its single prepare can claim. */
    const claimable = (nowMs: number): Map<string, bigint> => {
      const out = new Map<string, bigint>();
      for (const [key, amount, untilMs] of signed) {
        if (untilMs > nowMs && amount > (out.get(key) ?? 0n)) out.set(key, amount);
      }
      return out;
    };
    const large = stranger({ amount: 999n, untilMs: NOW + 420_000 });
    expect(await bid(large)).toBe("ok");
    const later = NOW + 1_000;
    await refreshBalances(later);
    expect(await bid({ ...large, amount: 1n, nowMs: later, untilMs: later + 420_000 })).toBe("ok");
    expect((await store.promises(1338, ASSET)).byTransfer).toEqual(claimable(later));
    // Before the fix the re-request freed 998: another requester got a bid for it.
    expect(await bid(stranger({ amount: 998n, nowMs: later }))).toBe("LiquidityUnavailable");
    expect(await bid(stranger({ amount: 501n, nowMs: later }))).toBe("LiquidityUnavailable");
    expect((await store.promises(1338, ASSET)).total).toBe(999n);
    expect([...claimable(later).values()].reduce((a, b) => a + b, 0n)).toBeLessThanOrEqual(1000n);

    // The large bid lapses on its own schedule; the small one still holds until its own bidExpiry.
    const afterLarge = NOW + 420_001;
    await refreshBalances(afterLarge);
    expect(await bid(stranger({ amount: 999n, nowMs: afterLarge, untilMs: afterLarge + 420_000 }))).toBe("ok");
    expect((await store.promises(1338, ASSET)).byTransfer).toEqual(claimable(afterLarge));
    expect((await store.promises(1338, ASSET)).total).toBe(1000n);
  });

  it("pins the bid the sending prepare used as a hard hold; the transfer's other bids are freed", async () => {
    const t = stranger({ amount: 600n });
    expect((await store.reserve(t)).code).toBe("ok");
    expect((await store.reserve({ ...t, amount: 300n, untilMs: t.untilMs + 1 })).code).toBe("ok");
    // The user prepared with the 300 bid: 300 is held, the 600 bid can no longer be used.
    expect(await store.pin(1338, ASSET, t.transferKey, NOW + 3_600_000, 300n)).toBe(true);
    expect(await store.promises(1338, ASSET)).toMatchObject({ total: 300n, hard: 300n });
    // A claim above the promise is capped at it; a transfer never bid is not held at all.
    const u = stranger({ amount: 100n });
    expect((await store.reserve(u)).code).toBe("ok");
    expect(await store.pin(1338, ASSET, u.transferKey, NOW + 3_600_000, 10_000n)).toBe(true);
    expect(await store.pin(1338, ASSET, "0xunknown-key", NOW + 10_000, 1n)).toBe(false);
    expect(await store.promises(1338, ASSET)).toMatchObject({ total: 400n, hard: 400n });
    // A prepared transfer gets no further bid (it cannot use one); a second pin only extends.
    expect(await store.reserve({ ...t, amount: 1n })).toMatchObject({
      code: "LiquidityUnavailable",
      detail: expect.stringContaining("already prepared"),
    });
    expect(await store.pin(1338, ASSET, t.transferKey, NOW + 1, 1n)).toBe(true);
    expect(await suite.redis.zscore(bidReservationExpiryKey(prefix, 1338, ASSET), t.transferKey)).toBe(
      String(NOW + 3_600_000),
    );
    expect((await store.reserve(stranger({ amount: 601n }))).code).toBe("LiquidityUnavailable");
    expect((await store.reserve(stranger({ amount: 600n }))).code).toBe("ok");
  });

  it("lets each bid lapse at its own untilMs, and holds lapse at their pin", async () => {
    const pinned = stranger({ amount: 600n, untilMs: NOW + 10_000 });
    const lapsing = stranger({ amount: 400n, untilMs: NOW + 10_000 });
    expect((await store.reserve(pinned)).code).toBe("ok");
    expect((await store.reserve(lapsing)).code).toBe("ok");
    expect((await store.reserve({ ...lapsing, amount: 100n, untilMs: NOW + 30_000 })).code).toBe("ok");
    expect(await store.pin(1338, ASSET, pinned.transferKey, NOW + 100_000, 600n)).toBe(true);
    const later = NOW + 20_000;
    await refreshBalances(later);
    expect((await store.reserve(stranger({ nowMs: later, amount: 301n }))).code).toBe("LiquidityUnavailable");
    expect((await store.promises(1338, ASSET)).byTransfer.get(lapsing.transferKey)).toBe(100n);
    expect((await store.reserve(stranger({ nowMs: later, amount: 300n }))).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(1000n);
    await refreshBalances(NOW + 100_000);
    expect((await store.reserve(stranger({ nowMs: NOW + 100_000, amount: 700n }))).code).toBe("ok");
  });

  it("withdraws only the unsent bid; releases a transfer's promise once", async () => {
    const t = stranger({ amount: 600n });
    expect((await store.reserve(t)).code).toBe("ok");
    const unsent = { ...t, amount: 700n, untilMs: t.untilMs + 1 };
    expect((await store.reserve(unsent)).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(700n);
    expect(await store.withdraw(unsent)).toBe(true);
    expect(await store.withdraw(unsent)).toBe(false);
    expect((await store.promises(1338, ASSET)).byTransfer.get(t.transferKey)).toBe(600n);
    expect(await store.release(1338, ASSET, t.transferKey)).toBe(true);
    expect(await store.release(1338, ASSET, t.transferKey)).toBe(false);
    expect(await store.promises(1338, ASSET)).toMatchObject({ total: 0n, hard: 0n, byTransfer: new Map() });
  });

  it(`keeps at most ${MAX_BIDS_PER_TRANSFER} open bids per transfer`, async () => {
    const t = stranger();
    for (let i = 0; i < MAX_BIDS_PER_TRANSFER; i += 1) {
      // Each smaller and longer (by a lapse step: lapse times are rounded up to it) than the one before: none
      // covers another, all stay promised.
      expect(
        (await store.reserve({ ...t, amount: BigInt(100 - i), untilMs: t.untilMs + i * LAPSE_STEP_MS })).code,
      ).toBe("ok");
    }
    expect(await store.reserve({ ...t, amount: 1n, untilMs: t.untilMs + 100 * LAPSE_STEP_MS })).toMatchObject({
      code: "AuctionRateExceeded",
      detail: expect.stringContaining("open bids"),
    });
    expect(await store.reservedTotal(1338, ASSET)).toBe(100n);
  });

  it("a dry run checks everything but neither reserves nor stamps the rate limit", async () => {
    const dry = params({ amount: 1000n, commit: false, rateLimitMs: 60_000 });
    expect((await store.reserve(dry)).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(0n);
    expect((await store.reserve({ ...dry, commit: true })).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(1000n);
  });

  it("stamps the rate limit per transfer, case-insensitively, never per user", async () => {
    const first = params({ rateLimitMs: 60_000 });
    expect((await store.reserve(first)).code).toBe("ok");
    expect((await store.reserve({ ...first, transferKey: first.transferKey.toUpperCase() })).code).toBe(
      "AuctionRateExceeded",
    );
    // The same user's next transfer (a new quote draws a new transactionId) is not stamped.
    expect((await store.reserve(params({ rateLimitMs: 60_000 }))).code).toBe("ok");
  });

  it("refuses stale or missing balances and gas as StaleBalance", async () => {
    expect((await store.reserve(params({ nowMs: NOW + 60_001 }))).code).toBe("StaleBalance");
    expect((await store.reserve(params({ receivingAssetId: "0x" + "33".repeat(20) }))).code).toBe("StaleBalance");
    await balances.setGasBalance(1337, 100n, NOW - 61_000);
    const outcome = await store.reserve(params());
    expect(outcome).toMatchObject({ code: "StaleBalance" });
    expect(outcome.detail).toContain("sending-gas-stale");
  });

  it("refuses low signer gas on either chain as NotEnoughGas", async () => {
    expect((await store.reserve(params({ minGasSending: 101n }))).code).toBe("NotEnoughGas");
    expect((await store.reserve(params({ minGasReceiving: 101n }))).code).toBe("NotEnoughGas");
    expect((await store.reserve(params({ minGasSending: 100n, minGasReceiving: 100n }))).code).toBe("ok");
  });
});

describe("bid reservations against a model (random bids, pins, withdrawals, releases and lapses)", () => {
  const NOW = 1_900_000_000_000;
  it("the total always equals the largest live bid or the live hold of each transfer, and nothing lapsed counts", async () => {
    const prefix = uniquePrefix();
    const store = createBidReservations(suite.redis, prefix);
    const balances = createBalanceStore(suite.redis, prefix);
    await balances.setRouterBalance(1338, ASSET, 10n ** 30n, NOW);
    await balances.setGasBalance(1337, 100n, NOW);
    await balances.setGasBalance(1338, 100n, NOW);
    type Entry = { amount: bigint; untilMs: number };
    const model = new Map<string, { hard: boolean; entries: Entry[] }>();
    const keys = Array.from({ length: 12 }, () => `${hexlify(randomBytes(32))}-${USER}`.toLowerCase());
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)] as T;
    /** A promise lapses at its untilMs rounded up to the lapse step. */
    const second = promiseLapseMs;
    const liveMax = (entries: Entry[], now: number): bigint =>
      entries.reduce((best, e) => (e.untilMs > now && e.amount > best ? e.amount : best), 0n);
    const expected = (now: number): bigint => [...model.values()].reduce((sum, r) => sum + liveMax(r.entries, now), 0n);
    let now = NOW;
    const base = {
      sendingChainId: 1337,
      sendingAssetId: ASSET,
      receivingChainId: 1338,
      receivingAssetId: ASSET,
      maxAgeMs: 10 ** 12,
      rateLimitMs: 0,
      minGasSending: 1n,
      minGasReceiving: 1n,
    };
    const prune = (nowMs: number): Promise<unknown> =>
      store.reserve({ ...base, transferKey: keys[0] as string, amount: 1n, nowMs, untilMs: nowMs, commit: false });
    for (let step = 0; step < 600; step += 1) {
      now += pick([0, 0, 200, 1000, 3000, 20_000]);
      // A dry run prunes at `now` (pin prunes at the wall clock, which this test's clock is ahead of).
      await prune(now);
      const key = pick(keys);
      const record = model.get(key);
      const live = record !== undefined && liveMax(record.entries, now) > 0n;
      const op = pick(["bid", "bid", "bid", "pin", "release"]);
      if (op === "bid") {
        const amount = BigInt(1 + Math.floor(Math.random() * 1000));
        const untilMs = now + 1000 * (1 + Math.floor(Math.random() * 60));
        const { code } = await store.reserve({ ...base, transferKey: key, amount, nowMs: now, untilMs, commit: true });
        if (live && record.hard) {
          expect(code).toBe("LiquidityUnavailable");
        } else if (code !== "AuctionRateExceeded") {
          // (16 open bids on one transfer refuse the next: the staircase merges covered ones, so fewer may be kept)
          expect(code).toBe("ok");
          const kept = live ? record.entries.filter((e) => e.untilMs > now) : [];
          if (Math.random() < 0.25) {
            // The newest bid was never sent (signing failed): withdrawn, the earlier ones stay.
            expect(await store.withdraw({ ...base, transferKey: key, amount, untilMs })).toBe(true);
            model.set(key, { hard: false, entries: kept });
          } else {
            model.set(key, { hard: false, entries: [...kept, { amount, untilMs: second(untilMs) }] });
          }
        }
      } else if (op === "pin") {
        const used = BigInt(1 + Math.floor(Math.random() * 1000));
        const untilMs = now + 1000 * (1 + Math.floor(Math.random() * 90));
        const pinned = await store.pin(1338, ASSET, key, untilMs, used);
        expect(pinned).toBe(live);
        if (live && !record.hard) {
          const held = used < liveMax(record.entries, now) ? used : liveMax(record.entries, now);
          model.set(key, { hard: true, entries: [{ amount: held, untilMs: second(untilMs) }] });
        } else if (live && record.hard && second(untilMs) > (record.entries[0] as Entry).untilMs) {
          const amount = (record.entries[0] as Entry).amount;
          model.set(key, { hard: true, entries: [{ amount, untilMs: second(untilMs) }] });
        }
      } else if (op === "release") {
        expect(await store.release(1338, ASSET, key)).toBe(live);
        model.delete(key);
      }
      // What is left is exactly what the model says is live.
      const promises = await store.promises(1338, ASSET);
      expect(promises.total).toBe(expected(now));
      const hard = [...model.values()].filter((r) => r.hard).reduce((sum, r) => sum + liveMax(r.entries, now), 0n);
      expect(promises.hard).toBe(hard);
    }
  });
});

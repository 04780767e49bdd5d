import { Redis } from "ioredis";
import {
  DIGIT_MATH_LUA,
  createBidReservations,
  type BidReservations,
  type ReserveParams,
} from "../../shared/transfers/bid-reservations";
import { createBalanceStore, type BalanceStore } from "../../shared/transfers/balance-store";
import { startRedis, type RedisServer } from "../harness/redis";
import { uniquePrefix } from "./submitter-fixture";

const MAX = (1n << 256n) - 1n;
const ASSET = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const USER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});

afterAll(async () => {
  await redis?.quit();
  await server?.stop();
});

describe("digit-string arithmetic in Lua (real Redis)", () => {
  const op = (name: "dadd" | "dsub" | "dcmp", a: string, b: string): Promise<string> =>
    redis.eval(`${DIGIT_MATH_LUA}\nreturn tostring(${name}(ARGV[1], ARGV[2]))`, 0, a, b) as Promise<string>;

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

  it("adds, subtracts (floored at 0) and compares uint256 values exactly", async () => {
    const values = samples();
    for (const a of values) {
      for (const b of values.slice(0, 12)) {
        expect(await op("dadd", a.toString(), b.toString())).toBe((a + b).toString());
        expect(await op("dsub", a.toString(), b.toString())).toBe((a > b ? a - b : 0n).toString());
        expect(await op("dcmp", a.toString(), b.toString())).toBe(String(a < b ? -1 : a > b ? 1 : 0));
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
    user: USER,
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
    store = createBidReservations(redis, prefix);
    balances = createBalanceStore(redis, prefix);
    await balances.setRouterBalance(1338, ASSET, 1000n, NOW);
    await balances.setGasBalance(1337, 100n, NOW);
    await balances.setGasBalance(1338, 100n, NOW);
  });

  it("never promises more than the balance in total (cap 100 %)", async () => {
    const codes = [];
    for (let i = 0; i < 11; i += 1) codes.push((await store.reserve(params())).code);
    expect(codes.slice(0, 10)).toEqual(Array(10).fill("ok"));
    expect(codes[10]).toBe("LiquidityUnavailable");
    expect(await store.reservedTotal(1338, ASSET)).toBe(1000n);
  });

  it("is atomic under concurrent reservations", async () => {
    const results = await Promise.all(Array.from({ length: 40 }, () => store.reserve(params({ amount: 70n }))));
    expect(results.filter((r) => r.code === "ok")).toHaveLength(14);
    expect(await store.reservedTotal(1338, ASSET)).toBe(980n);
  });

  it("refuses an amount above the balance as NotEnoughLiquidity", async () => {
    expect((await store.reserve(params({ amount: 1001n }))).code).toBe("NotEnoughLiquidity");
  });

  it("handles uint256-sized amounts", async () => {
    await balances.setRouterBalance(1338, ASSET, MAX, NOW);
    expect((await store.reserve(params({ amount: MAX - 5n }))).code).toBe("ok");
    expect((await store.reserve(params({ amount: 6n }))).code).toBe("LiquidityUnavailable");
    expect((await store.reserve(params({ amount: 5n }))).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(MAX);
  });

  it("lets reservations lapse at untilMs, unless pinned", async () => {
    const pinned = params({ amount: 600n, untilMs: NOW + 1000 });
    const lapsing = params({ amount: 400n, untilMs: NOW + 1000 });
    expect((await store.reserve(pinned)).code).toBe("ok");
    expect((await store.reserve(lapsing)).code).toBe("ok");
    expect(await store.pin(1338, ASSET, pinned.transferKey, NOW + 10_000)).toBe(true);
    expect(await store.pin(1338, ASSET, "0xunknown-key", NOW + 10_000)).toBe(false);
    const later = { nowMs: NOW + 2000 };
    await balances.setRouterBalance(1338, ASSET, 1000n, NOW + 2000);
    await balances.setGasBalance(1337, 100n, NOW + 2000);
    await balances.setGasBalance(1338, 100n, NOW + 2000);
    expect((await store.reserve(params({ ...later, amount: 401n, untilMs: NOW + 5000 }))).code).toBe(
      "LiquidityUnavailable",
    );
    expect((await store.reserve(params({ ...later, amount: 400n, untilMs: NOW + 5000 }))).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(1000n);
  });

  it("releases a reservation once, and a re-bid of the same transfer replaces its amount", async () => {
    const first = params({ amount: 900n });
    expect((await store.reserve(first)).code).toBe("ok");
    expect((await store.reserve({ ...first, amount: 950n })).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(950n);
    expect(await store.release(1338, ASSET, first.transferKey)).toBe(true);
    expect(await store.release(1338, ASSET, first.transferKey)).toBe(false);
    expect(await store.reservedTotal(1338, ASSET)).toBe(0n);
  });

  it("a dry run checks everything but neither reserves nor stamps the rate limit", async () => {
    const dry = params({ amount: 1000n, commit: false, rateLimitMs: 60_000 });
    expect((await store.reserve(dry)).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(0n);
    expect((await store.reserve({ ...dry, commit: true })).code).toBe("ok");
    expect(await store.reservedTotal(1338, ASSET)).toBe(1000n);
  });

  it("stamps the rate limit per (user, chains, assets), case-insensitively", async () => {
    expect((await store.reserve(params({ rateLimitMs: 60_000 }))).code).toBe("ok");
    expect((await store.reserve(params({ rateLimitMs: 60_000, user: USER.toLowerCase() }))).code).toBe(
      "AuctionRateExceeded",
    );
    expect((await store.reserve(params({ rateLimitMs: 60_000, user: "0x" + "22".repeat(20) }))).code).toBe("ok");
    expect((await store.reserve(params({ rateLimitMs: 60_000, receivingChainId: 1337 }))).code).not.toBe(
      "AuctionRateExceeded",
    );
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

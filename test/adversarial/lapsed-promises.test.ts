import { getAddress, hexlify, randomBytes } from "ethers";
import { transferKey } from "../../shared/queues";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations, promiseLapseMs, type ReserveParams } from "../../shared/transfers/bid-reservations";
import { RESERVATION_GRACE_SEC } from "../../services/auction/bid/reserve-and-bid";
import { BID_EXPIRY_SEC } from "../../shared/protocol/expiry";
import { useRedis } from "../harness/redis";
import { uniquePrefix } from "../harness/prefix";

/**
 * "Lapsed promises keep counting": after 5 000 rotating-key bids had all lapsed, a 60 % request was still
 * refused (c695758 pruned at most 1 000 lapsed transfers per script call, and that call blocked Redis 20.6 ms).
 * A lapsed promise must stop counting at its lapse time, whatever the backlog. The auction's own script on a real
 * Redis, with the times the auction uses (bidExpiry = now + 300 s, promised until bidExpiry + 120 s).
 */
const suite = useRedis();
const ASSET = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";

describe("lapsed promises", () => {
  it("5 000 lapsed promises do not count: a 60 % request right after their lapse time is answered", async () => {
    const prefix = uniquePrefix();
    const reservations = createBidReservations(suite.redis, prefix);
    const balances = createBalanceStore(suite.redis, prefix);
    const fresh = async (nowMs: number): Promise<void> => {
      await balances.setRouterBalance(1338, ASSET, 1000n, nowMs);
      await balances.setGasBalance(1337, 1n, nowMs);
      await balances.setGasBalance(1338, 1n, nowMs);
    };
    const bid = (nowMs: number, amount: bigint, commit = true): ReserveParams => {
      const user = getAddress(hexlify(randomBytes(20)));
      const bidExpiry = Math.floor(nowMs / 1000) + BID_EXPIRY_SEC;
      return {
        sendingChainId: 1337,
        sendingAssetId: ASSET,
        receivingChainId: 1338,
        receivingAssetId: ASSET,
        transferKey: transferKey(hexlify(randomBytes(32)), user),
        amount,
        nowMs,
        untilMs: (bidExpiry + RESERVATION_GRACE_SEC) * 1000,
        maxAgeMs: 60_000,
        rateLimitMs: 500,
        minGasSending: 0n,
        minGasReceiving: 0n,
        commit,
      };
    };

    // The swarm: 5 000 requesters with a key each, over 50 s, each taking 320 (each fits next to the others'
    // promises, counted up to half of 1 000): 1 600 000 promised against a balance of 1 000.
    let nowMs = Math.floor(Date.now() / 1000) * 1000;
    // The last bid's lapse time: its bidExpiry + grace, rounded up to the lapse step.
    const lapseMs = promiseLapseMs((Math.floor(nowMs / 1000) + 50 + BID_EXPIRY_SEC + RESERVATION_GRACE_SEC) * 1000);
    for (let i = 0; i < 5000; i += 1) {
      if (i % 100 === 0) {
        nowMs += 1000;
        await fresh(nowMs);
      }
      expect((await reservations.reserve(bid(nowMs, 320n))).code).toBe("ok");
    }
    expect(await reservations.reservedTotal(1338, ASSET)).toBe(1_600_000n);
    // While they hold, 60 % is refused (they count up to half of the free liquidity)...
    expect((await reservations.reserve(bid(nowMs, 600n, false))).code).toBe("LiquidityUnavailable");

    // ...up to the last one's lapse time (never earlier: that would promise the same liquidity twice)...
    nowMs = lapseMs - 1;
    await fresh(nowMs);
    expect((await reservations.reserve(bid(nowMs, 600n, false))).code).toBe("LiquidityUnavailable");
    // ...and from the last one's lapse time on, none of them counts: the first request then gets its bid.
    nowMs = lapseMs;
    await fresh(nowMs);
    const honest = await reservations.reserve(bid(nowMs, 600n));
    expect(honest.code).toBe("ok");
    expect(honest.detail).toContain("unprepared bids of other transfers 0");
    expect(await reservations.reservedTotal(1338, ASSET)).toBe(600n);
  });

  it("each promise stops counting exactly at its own lapse time, not a script call later", async () => {
    const prefix = uniquePrefix();
    const reservations = createBidReservations(suite.redis, prefix);
    const balances = createBalanceStore(suite.redis, prefix);
    const t0 = 1_900_000_000_000;
    const params = (nowMs: number, amount: bigint, untilMs: number, commit = true): ReserveParams => ({
      sendingChainId: 1337,
      sendingAssetId: ASSET,
      receivingChainId: 1338,
      receivingAssetId: ASSET,
      transferKey: transferKey(hexlify(randomBytes(32)), getAddress(hexlify(randomBytes(20)))),
      amount,
      nowMs,
      untilMs,
      maxAgeMs: 10 ** 12,
      rateLimitMs: 0,
      minGasSending: 0n,
      minGasReceiving: 0n,
      commit,
    });
    await balances.setRouterBalance(1338, ASSET, 1000n, t0);
    await balances.setGasBalance(1337, 1n, t0);
    await balances.setGasBalance(1338, 1n, t0);
    // 3 000 promises of 1 lapsing at t0 + 10 s, 3 000 more at t0 + 20 s.
    for (let i = 0; i < 6000; i += 1) {
      expect((await reservations.reserve(params(t0, 1n, t0 + (i < 3000 ? 10_000 : 20_000)))).code).toBe("ok");
    }
    const others = async (nowMs: number): Promise<string> =>
      /other transfers (\d+)/.exec((await reservations.reserve(params(nowMs, 1n, nowMs, false))).detail)?.[1] ?? "";
    expect(await others(t0 + 10_000 - 1)).toBe("6000");
    expect(await others(t0 + 10_000)).toBe("3000");
    expect(await others(t0 + 20_000 - 1)).toBe("3000");
    expect(await others(t0 + 20_000)).toBe("0");
  });
});

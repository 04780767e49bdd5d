import { Redis } from "ioredis";
import { parseEther } from "ethers";
import { bidReservationExpiryKey, bidReservationsKey } from "../../shared/coordination/keys";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations, promiseLapseMs } from "../../shared/transfers/bid-reservations";
import type { RunningPoller } from "../../services/poller/start-poller";
import {
  RECEIVING,
  SENDING,
  pollerConfig,
  routerPrepareReceiver,
  startPollerStack,
  startPollers,
  userPrepare,
  type PollerStack,
} from "./poller-fixture";
import { waitFor } from "../harness/wait";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

jest.setTimeout(120_000);

/**
 * The pollers' side of the auction's reservations: the sending chain's poller turns a transfer's promise into a
 * hard hold of the bid our sending-side prepare carries when it shows up, the receiving chain's poller releases it once the receiving prepare is
 * stored and the balance it then writes already reflects the lock.
 */
describe("auction reservations through the pollers", () => {
  let s: PollerStack;
  let redis: Redis;
  let pollers: RunningPoller[] = [];

  beforeAll(async () => {
    s = await startPollerStack();
    redis = new Redis(s.redisUrl);
  });

  afterAll(async () => {
    await Promise.all(pollers.map((p) => p.stop()));
    await redis?.quit();
    await s?.stack.stop();
  });

  it("pins on the sending prepare and releases after the receiving prepare and a balance refresh", async () => {
    const prefix = uniquePrefix();
    const config = pollerConfig(s, prefix);
    const logs = captureLogs();
    const token = s.receiving.deployment.token;
    const startBlock =
      Math.min(await s.sending.provider.getBlockNumber(), await s.receiving.provider.getBlockNumber()) + 1;

    const prepared = await userPrepare(s, { user: 5 });
    // What the auction did when it signed this bid.
    const balances = createBalanceStore(redis, prefix);
    await balances.setRouterBalance(RECEIVING, token, parseEther("1000000"));
    await balances.setGasBalance(SENDING, parseEther("10"));
    await balances.setGasBalance(RECEIVING, parseEther("10"));
    const reservations = createBidReservations(redis, prefix);
    const reservedAtMs = Date.now();
    const params = {
      sendingChainId: SENDING,
      sendingAssetId: prepared.bid.sendingAssetId,
      receivingChainId: RECEIVING,
      receivingAssetId: token,
      transferKey: prepared.transferKey,
      amount: BigInt(prepared.bid.amountReceived),
      nowMs: reservedAtMs,
      untilMs: reservedAtMs + 60_000,
      maxAgeMs: 60_000,
      rateLimitMs: 0,
      minGasSending: 1n,
      minGasReceiving: 1n,
      commit: true,
    };
    const outcome = await reservations.reserve(params);
    expect(outcome.code).toBe("ok");
    // A re-request got a larger bid for the same transfer, but the user prepared with the first one.
    const larger = await reservations.reserve({
      ...params,
      amount: BigInt(prepared.bid.amountReceived) * 2n,
      untilMs: reservedAtMs + 60_001,
    });
    expect(larger.code).toBe("ok");
    expect(await reservations.reservedTotal(RECEIVING, token)).toBe(BigInt(prepared.bid.amountReceived) * 2n);

    pollers = await startPollers(s, config, logs, { startBlock });
    const expiryKey = bidReservationExpiryKey(prefix, RECEIVING, token);
    const pinnedUntil = await waitFor("the pin", async () => {
      const score = Number(await redis.zscore(expiryKey, prepared.transferKey));
      return score > reservedAtMs + 30 * 60_000 ? score : undefined;
    });
    // An hour from the pin, rounded up to the lapse step.
    expect(pinnedUntil).toBeLessThanOrEqual(promiseLapseMs(Date.now() + 3600_000));
    // The hold is the bid the prepare carries (its encodedBid), not the larger one it did not use.
    expect(await reservations.promises(RECEIVING, token)).toMatchObject({
      total: BigInt(prepared.bid.amountReceived),
      hard: BigInt(prepared.bid.amountReceived),
    });

    const receipt = await routerPrepareReceiver(s, prepared);
    const preparedAtMs = Date.now();
    await waitFor("the release", async () =>
      (await redis.hexists(bidReservationsKey(prefix, RECEIVING, token), `p:${prepared.transferKey.toLowerCase()}`)) ===
      0
        ? true
        : undefined,
    );
    expect(await reservations.reservedTotal(RECEIVING, token)).toBe(0n);
    // The balance the auction now reads was refreshed after the receiving prepare, so it shows the lock.
    const stored = await balances.getRouterBalance(RECEIVING, token);
    const tm = s.receiving.deployment.contracts.transactionManager;
    const onChain = (await tm.getFunction("routerBalances")(prepared.bid.router, token, {
      blockTag: receipt.blockNumber,
    })) as bigint;
    expect(stored?.updatedAtMs).toBeGreaterThanOrEqual(preparedAtMs - 1000);
    expect(stored?.amount).toBe(onChain);
  });
});

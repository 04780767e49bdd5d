import { Redis } from "ioredis";
import { parseEther } from "ethers";
import { startPoller, type RunningPoller } from "../../services/poller/start-poller";
import { transferKey } from "../../shared/queues";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations, type ReserveParams } from "../../shared/transfers/bid-reservations";
import { RESERVATION_GRACE_SEC } from "../../services/auction/bid/reserve-and-bid";
import {
  RECEIVING,
  SENDING,
  pollerConfig,
  startPollerStack,
  userPrepare,
  type PollerStack,
} from "../integration/poller-fixture";
import { waitFor } from "../harness/wait";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

jest.setTimeout(180_000);

/**
 * "A 1-wei prepare locks 99 % of the liquidity for an hour": a requester takes one bid for 99 % of the
 * free liquidity (allowed: a single transfer may exceed the 50 % share) and prepares on the sending chain with
 * it, locking 1 wei. The sending chain's poller must not turn that bid into a hard hold: an honest request for 10 %
 * is still answered. Real contracts, Redis and pollers at their shipped defaults (1 s ticks, default providers);
 * the honest request runs the auction's own reservation step (the one atomic script every bid goes through).
 */
describe("a sending prepare holds only what it really locked", () => {
  let s: PollerStack;
  let redis: Redis;
  let pollers: RunningPoller[] = [];

  beforeAll(async () => {
    s = await startPollerStack();
    redis = new Redis(s.redisUrl);
  });

  afterEach(async () => {
    await Promise.all(pollers.map((p) => p.stop()));
    pollers = [];
  });

  afterAll(async () => {
    await redis?.quit();
    await s?.stack.stop();
  });

  it("a 1-wei prepare with a bid for 99 % of the liquidity leaves an honest 10 % request answered", async () => {
    const prefix = uniquePrefix();
    const config = pollerConfig(s, prefix);
    const logs = captureLogs();
    const token = s.receiving.deployment.token;
    const router = await s.routerSigner.getAddress();
    const tm = s.receiving.deployment.contracts.transactionManager;
    const liquidity = (await tm.getFunction("routerBalances")(router, token)) as bigint;
    const startBlock =
      Math.min(await s.sending.provider.getBlockNumber(), await s.receiving.provider.getBlockNumber()) + 1;

    // The attacker's bid, signed by the router, for 99 % of the free liquidity; its prepare locks 1 wei.
    const huge = (liquidity * 99n) / 100n;
    const attack = await userPrepare(s, {
      user: 6,
      bid: { amount: huge.toString(), amountReceived: huge.toString() },
      tamper: { amount: 1n },
    });
    const balances = createBalanceStore(redis, prefix);
    await balances.setRouterBalance(RECEIVING, token, liquidity);
    await balances.setGasBalance(SENDING, parseEther("10"));
    await balances.setGasBalance(RECEIVING, parseEther("10"));
    const reservations = createBidReservations(redis, prefix);
    const request = (key: string, amount: bigint, commit: boolean): ReserveParams => {
      const nowMs = Date.now();
      return {
        sendingChainId: SENDING,
        sendingAssetId: s.sending.deployment.token,
        receivingChainId: RECEIVING,
        receivingAssetId: token,
        transferKey: key,
        amount,
        nowMs,
        untilMs: (attack.bid.bidExpiry + RESERVATION_GRACE_SEC) * 1000,
        maxAgeMs: 60_000,
        rateLimitMs: 500,
        // The pollers write the signer's real gas balances (none on the sending chain here): gas is not the subject.
        minGasSending: 0n,
        minGasReceiving: 0n,
        commit,
      };
    };
    // What the auction recorded when it signed the attacker's bid.
    expect((await reservations.reserve(request(attack.transferKey, huge, true))).code).toBe("ok");

    pollers = await Promise.all(
      [SENDING, RECEIVING].map((chainId) =>
        startPoller({ config, logger: logs.logger, chainId, options: { startBlock } }),
      ),
    );
    // The sending poller stored the prepare, then finished the tick that decided it (pin and plan included).
    const stored = await waitFor(
      "the attacker's sending prepare stored",
      () =>
        logs
          .lines()
          .findIndex(
            (l) =>
              l.at === "poller.record" &&
              l.recordChainId === SENDING &&
              String(l.transferKey).toLowerCase() === attack.transferKey.toLowerCase(),
          ) + 1 || undefined,
      60_000,
    );
    await waitFor(
      "the sending poller's next two ticks",
      () =>
        logs
          .lines()
          .slice(stored)
          .filter((l) => l.at === "poller.tick" && l.chainId === SENDING).length >= 2 || undefined,
      60_000,
    );

    // No hard hold for what was never locked: an honest 10 % request gets its bid.
    const promises = await reservations.promises(RECEIVING, token);
    expect(promises.hard).toBe(0n);
    const honest = await reservations.reserve(
      request(transferKey(`0x${"ab".repeat(32)}`, `0x${"12".repeat(20)}`), liquidity / 10n, false),
    );
    expect(honest).toMatchObject({ code: "ok" });
  });
});

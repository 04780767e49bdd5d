import { createProcessActiveTransactionsOperation } from "../../services/admin/operations/process-active-transactions";
import { TX_JOB } from "../../shared/queues";
import { pollerCursorKey, reconcileRequestKey } from "../../shared/coordination/keys";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { captureLogs } from "../harness/logs";
import { waitFor } from "../harness/wait";
import {
  AMOUNT,
  RECEIVING,
  SENDING,
  nextTick,
  pollerConfig,
  routerPrepareReceiver,
  startTestPollers,
  syncedPast,
  usePollerSuite,
  userFulfill,
  userPrepare,
  cursorAt,
} from "./poller-fixture";

const USER = 6;

/**
 * POST /process-active-transactions: the admin asks each chain's poller (a Redis key, no import) to reconcile and
 * decide every open transfer at its next tick. The case: the receiving poller's log read skipped the user's
 * fulfill, and the scheduled reconcile is 10 minutes away (lengthened from 60 s so that only the operator's
 * request can find the fulfill within the test); the request must end in the router's claim.
 */
describe("process-active-transactions (admin operation + both pollers, anvil 1337 → 1338, redis)", () => {
  const s = usePollerSuite("admin-liquidity-process");

  it("an open transfer whose fulfill the store missed is reconciled at the next tick and claimed", async () => {
    const config = pollerConfig(s, s.prefix);
    await startTestPollers(s, config, { reconcileIntervalMs: 10 * 60_000 });
    const prepared = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver job", () => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    await syncedPast(s.queues, s.prefix, RECEIVING, receiverPrepare.blockNumber);

    // The receiving poller skips the next blocks, as if eth_getLogs had answered them without the fulfill.
    const skipTo = (await s.receiving.provider.getBlockNumber()) + 3;
    await s.queues.redis.set(pollerCursorKey(s.prefix, RECEIVING), cursorAt(skipTo));
    const fulfill = await userFulfill(s, prepared, receiverPrepare);
    expect(fulfill.receipt.blockNumber).toBeLessThanOrEqual(skipTo);
    await s.receiving.anvil.mine(4);
    await nextTick(s, RECEIVING);
    await nextTick(s, SENDING);
    // Both pollers ticked past the fulfill and nothing claims: the store still shows the receiving side prepared.
    expect(await s.queues.job(SENDING, TX_JOB.fulfillSender, prepared.transferKey)).toBeUndefined();

    const store = createTransferStore(s.queues.redis, s.prefix);
    const processActive = createProcessActiveTransactionsOperation({
      config,
      redis: s.queues.redis,
      listOpen: (chainId) => store.listOpen(chainId),
      logger: captureLogs("admin").logger,
    });
    const active = await processActive({ requestId: "process-active-test" });
    expect(active).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          chainId: SENDING,
          transactionId: prepared.invariant.transactionId,
          amount: AMOUNT.toString(),
          status: "Prepared",
        }),
        expect.objectContaining({ chainId: RECEIVING, transactionId: prepared.invariant.transactionId }),
      ]),
    );

    const claim = await waitFor(
      "fulfill-sender job",
      () => s.queues.job(SENDING, TX_JOB.fulfillSender, prepared.transferKey),
      15_000,
    );
    expect(claim.data).toMatchObject({ chainId: SENDING, receiverFulfillTransactionHash: fulfill.receipt.hash });
    // Each poller clears its chain's request once a tick reconciled and decided everything.
    for (const chainId of [SENDING, RECEIVING]) {
      await waitFor(`chain ${chainId}'s request done`, async () =>
        (await s.queues.redis.exists(reconcileRequestKey(s.prefix, chainId))) === 0 ? true : undefined,
      );
    }
    expect(s.logs.lines()).toContainEqual(
      expect.objectContaining({
        at: "poller.reconcileRequest",
        message: "every open transfer reconciled and decided again",
      }),
    );
  });
});

import type { RouterConfig } from "../../shared/config/types";
import { TX_JOB } from "../../shared/queues";
import { pollerCursorKey } from "../../shared/coordination/keys";
import type { PollerOptions, RunningPoller } from "../../services/poller/start-poller";
import {
  AMOUNT,
  RECEIVING,
  SENDING,
  nextTick,
  pollerConfig,
  routerPrepareReceiver,
  startTestPoller,
  startTestPollers,
  syncedPast,
  usePollerSuite,
  userFulfill,
  userPrepare,
  type UserFulfilled,
  type UserPrepared,
  cursorAt,
} from "./poller-fixture";
import { waitFor } from "../harness/wait";
import { startRpcProxy } from "../harness/rpc-proxy";
import { DECISION_BATCH_SIZE } from "../../services/poller/decide-open";

/**
 * A receiving-side fulfill log the poller never saw (a lookback that starts after it, a log dropped by
 * a lagging backend) must still end in the router's claim on the sending side, never in a cancel: the poller
 * reconciles open transfers against `variantTransactionData` on both chains and finds the missed fulfill.
 */

const USER = 5;

describe("poller reconcile (missed receiving fulfill, anvil 1337 → 1338, redis)", () => {
  const s = usePollerSuite("poller-reconcile");

  const startOne = (config: RouterConfig, chainId: number, options: PollerOptions): Promise<RunningPoller> =>
    startTestPoller(s, { config, chainId, options });
  const fulfillJob = (p: UserPrepared) =>
    waitFor("fulfill-sender job", () => s.queues.job(SENDING, TX_JOB.fulfillSender, p.transferKey), 15_000);

  function expectClaim(job: Awaited<ReturnType<typeof fulfillJob>>, p: UserPrepared, fulfill: UserFulfilled): void {
    expect(job.data).toEqual({
      chainId: SENDING,
      txData: {
        ...p.invariant,
        amount: AMOUNT.toString(),
        expiry: p.bid.expiry,
        preparedBlockNumber: p.receipt.blockNumber,
      },
      signature: fulfill.signature.toLowerCase(),
      relayerFee: "0",
      callData: "0x",
      receiverFulfillTransactionHash: fulfill.receipt.hash,
    });
  }

  it("claims the sending side when the receiving chain's lookback starts after the whole receiving side (prepare and fulfill)", async () => {
    const prepared = await userPrepare(s, { user: USER });
    const fulfill = await userFulfill(s, prepared, await routerPrepareReceiver(s, prepared));
    const config = pollerConfig(s, s.prefix);
    await startOne(config, SENDING, { startBlock: prepared.receipt.blockNumber });
    await startOne(config, RECEIVING, { startBlock: (await s.receiving.provider.getBlockNumber()) + 1 });

    expectClaim(await fulfillJob(prepared), prepared, fulfill);
    // Reconciled before its first decision: the receiving side was never re-prepared, nor the sending side cancelled.
    expect(await s.queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey)).toBeUndefined();
    expect(await s.queues.job(SENDING, TX_JOB.cancelSender, prepared.transferKey)).toBeUndefined();
    expect(
      s.logs
        .lines()
        .filter((l) => l.at === "poller.reconcile" && l.transferKey === prepared.transferKey)
        .map((l) => l.level),
    ).toEqual(["warn"]);
  });

  it("claims the sending side when the receiving poller's log read skipped the fulfill (record stuck at Prepared)", async () => {
    const config = pollerConfig(s, s.prefix);
    const pollers = await startTestPollers(s, config);
    const receivingPoller = pollers[1];
    const prepared = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver job", () => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    await syncedPast(s.queues, s.prefix, RECEIVING, receiverPrepare.blockNumber);
    await receivingPoller.stop();

    const fulfill = await userFulfill(s, prepared, receiverPrepare);
    // As if eth_getLogs had answered this range without the fulfill: the cursor is past it.
    await s.queues.redis.set(pollerCursorKey(s.prefix, RECEIVING), cursorAt(fulfill.receipt.blockNumber));
    await startOne(config, RECEIVING, {});

    expectClaim(await fulfillJob(prepared), prepared, fulfill);
    await nextTick(s, RECEIVING); // the claim came from the sending poller; a cancel would come from this one
    expect(await s.queues.job(RECEIVING, TX_JOB.cancelReceiver, prepared.transferKey)).toBeUndefined();
  });

  it("alerts loudly and decides nothing when the receiving side completed on chain but its logs cannot be found", async () => {
    const prepared = await userPrepare(s, { user: USER });
    await userFulfill(s, prepared, await routerPrepareReceiver(s, prepared));
    await s.receiving.anvil.mine(5);
    const config = pollerConfig(s, s.prefix);
    // A search window of one block: the fulfill is older than that.
    await startOne(config, SENDING, { startBlock: prepared.receipt.blockNumber, reconcileSearchBlocks: 1 });
    await startOne(config, RECEIVING, { startBlock: (await s.receiving.provider.getBlockNumber()) + 1 });

    const alert = await waitFor("reconcile alert", async () =>
      s.logs
        .lines()
        .find((l) => l.at === "poller.reconcile" && l.transferKey === prepared.transferKey && l.level === "error"),
    );
    expect(alert).toMatchObject({
      side: "receiving",
      sideChainId: RECEIVING,
      verdict: "store-behind",
      storedStatus: null,
    });
    await nextTick(s, SENDING); // the alerting tick went on to its decisions: one that enqueued would show now
    expect(await s.queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey)).toBeUndefined();
    expect(await s.queues.job(SENDING, TX_JOB.cancelSender, prepared.transferKey)).toBeUndefined();
  });

  it("never cancels an expired receiving side that is fulfilled on chain: reads both sides first, and claims", async () => {
    const config = pollerConfig(s, s.prefix);
    await startTestPollers(s, config, { reconcileIntervalMs: 10 * 60_000 });
    const prepared = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver job", () => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    await syncedPast(s.queues, s.prefix, RECEIVING, receiverPrepare.blockNumber);

    // The running receiving poller skips the next blocks (a cursor a little ahead: it waits for the head to pass).
    const skipTo = (await s.receiving.provider.getBlockNumber()) + 3;
    await s.queues.redis.set(pollerCursorKey(s.prefix, RECEIVING), cursorAt(skipTo));
    const fulfill = await userFulfill(s, prepared, receiverPrepare);
    expect(fulfill.receipt.blockNumber).toBeLessThanOrEqual(skipTo);
    // Last in this file: the receiving chain's clock moves 3 days on. The receiving side is expired by the store's view.
    await s.receiving.anvil.increaseTime(3 * 86400);
    await s.receiving.anvil.mine(4);

    expectClaim(await fulfillJob(prepared), prepared, fulfill);
    await nextTick(s, RECEIVING); // the claim came from the sending poller; a cancel would come from this one
    expect(await s.queues.job(RECEIVING, TX_JOB.cancelReceiver, prepared.transferKey)).toBeUndefined();
  });

  it("reconciles open transfers a batch at a time against a slow RPC, and still decides each of them", async () => {
    const count = 6;
    const prepared: UserPrepared[] = [];
    for (let i = 0; i < count; i += 1) prepared.push(await userPrepare(s, { user: USER }));
    // A distant public RPC for the sending chain: every variant read (eth_call) takes 150 ms.
    const proxy = await startRpcProxy(s.stack.chain(SENDING).anvil.url);
    proxy.slow("eth_call", 150);
    try {
      const base = pollerConfig(s, s.prefix);
      const sending = base.chainConfig[String(SENDING)];
      const config: RouterConfig = {
        ...base,
        chainConfig: { ...base.chainConfig, [String(SENDING)]: { ...sending, providers: [proxy.url] } },
      };
      // The first tick reconciles every open record before deciding it (a reconcile is due at start).
      await startOne(config, SENDING, { startBlock: prepared[0].receipt.blockNumber });
      for (const p of prepared) {
        await waitFor("prepare-receiver job", () => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey));
      }
      const calls = proxy.calls("eth_call");
      expect(calls.total).toBeGreaterThanOrEqual(count);
      // One after another they would never overlap; a batch reads them together (at most a batch at once).
      expect(calls.maxInFlight).toBeGreaterThan(1);
      expect(calls.maxInFlight).toBeLessThanOrEqual(DECISION_BATCH_SIZE);
      expect(s.logs.lines().filter((l) => l.at === "poller.decide" && l.level === "error")).toEqual([]);
    } finally {
      await proxy.down();
    }
  });
});

import { getBytes, type ContractTransactionReceipt } from "ethers";
import type { RouterConfig } from "../../shared/config/types";
import { fulfillPayloadHash } from "../../shared/protocol/user-signatures";
import { TX_JOB, pollerCursorKey } from "../../shared/queues";
import { startPoller, type PollerOptions, type RunningPoller } from "../../services/poller/start-poller";
import { anvilWallet } from "../harness/anvil";
import { liveChildPids } from "../harness/child-process";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import {
  AMOUNT,
  FAST,
  RECEIVING,
  SENDING,
  openQueues,
  pollerConfig,
  routerPrepareReceiver,
  startPollerStack,
  startPollers,
  syncedPast,
  userPrepare,
  type PollerStack,
  type Queues,
  type UserPrepared,
} from "./poller-fixture";
import { captureLogs, uniquePrefix, waitFor, type CapturedLogger } from "./submitter-fixture";

/**
 * Issue 9: a receiving-side fulfill log the poller never saw (a lookback that starts after it, a log dropped by
 * a lagging backend) must still end in the router's claim on the sending side, never in a cancel: the poller
 * reconciles open transfers against `variantTransactionData` on both chains and finds the missed fulfill.
 */

const USER = 5;

describe("poller reconcile (missed receiving fulfill, anvil 1337 → 1338, redis)", () => {
  let s: PollerStack;
  let queues: Queues;
  let logs: CapturedLogger;
  let prefix: string;
  const running: RunningPoller[] = [];

  const startOne = async (config: RouterConfig, chainId: number, options: PollerOptions): Promise<RunningPoller> => {
    const poller = await startPoller({ config, logger: logs.logger, chainId, options: { ...FAST, ...options } });
    running.push(poller);
    return poller;
  };
  const fulfillJob = (p: UserPrepared) =>
    waitFor("fulfill-sender job", () => queues.job(SENDING, TX_JOB.fulfillSender, p.transferKey), 15_000);

  /** The user's fulfill of the receiving side the router prepared, with the signature the claim needs. */
  async function userFulfill(
    p: UserPrepared,
    receiverPrepare: ContractTransactionReceipt,
  ): Promise<{ signature: string; receipt: ContractTransactionReceipt }> {
    const user = anvilWallet(USER, s.receiving.provider);
    const payload = {
      transactionId: p.transactionId,
      relayerFee: "0",
      receivingChainId: RECEIVING,
      receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
    };
    const signature = await user.signMessage(getBytes(fulfillPayloadHash(payload)));
    const txData = {
      ...p.invariant,
      amount: p.bid.amountReceived,
      expiry: p.bid.expiry - 86400,
      preparedBlockNumber: receiverPrepare.blockNumber,
    };
    const tm = nxtpContractAt("TransactionManager", s.receiving.deployment.transactionManager, user);
    const receipt = await sendTx(tm, "fulfill", [
      { txData, relayerFee: 0, signature, callData: "0x", encodedMeta: "0x" },
    ]);
    return { signature, receipt };
  }

  function expectClaim(
    job: Awaited<ReturnType<typeof fulfillJob>>,
    p: UserPrepared,
    fulfill: { signature: string; receipt: ContractTransactionReceipt },
  ): void {
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

  beforeAll(async () => {
    s = await startPollerStack();
  }, 120_000);

  beforeEach(() => {
    prefix = uniquePrefix();
    queues = openQueues(s.redisUrl, prefix);
    logs = captureLogs();
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await queues.close();
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("claims the sending side when the receiving chain's lookback starts after the whole receiving side (prepare and fulfill)", async () => {
    const prepared = await userPrepare(s, { user: USER });
    const fulfill = await userFulfill(prepared, await routerPrepareReceiver(s, prepared));
    const config = pollerConfig(s, prefix);
    await startOne(config, SENDING, { startBlock: prepared.receipt.blockNumber });
    await startOne(config, RECEIVING, { startBlock: (await s.receiving.provider.getBlockNumber()) + 1 });

    expectClaim(await fulfillJob(prepared), prepared, fulfill);
    // Reconciled before its first decision: the receiving side was never re-prepared, nor the sending side cancelled.
    expect(await queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey)).toBeUndefined();
    expect(await queues.job(SENDING, TX_JOB.cancelSender, prepared.transferKey)).toBeUndefined();
    expect(
      logs
        .lines()
        .filter((l) => l.at === "poller.reconcile" && l.transferKey === prepared.transferKey)
        .map((l) => l.level),
    ).toEqual(["warn"]);
  });

  it("claims the sending side when the receiving poller's log read skipped the fulfill (record stuck at Prepared)", async () => {
    const config = pollerConfig(s, prefix);
    const pollers = await startPollers(s, config, logs);
    running.push(...pollers);
    const receivingPoller = pollers[1];
    const prepared = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver job", () => queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    await syncedPast(queues, prefix, RECEIVING, receiverPrepare.blockNumber);
    await receivingPoller.stop();

    const fulfill = await userFulfill(prepared, receiverPrepare);
    // As if eth_getLogs had answered this range without the fulfill: the cursor is past it (older bare format).
    await queues.redis.set(pollerCursorKey(prefix, RECEIVING), String(fulfill.receipt.blockNumber));
    await startOne(config, RECEIVING, {});

    expectClaim(await fulfillJob(prepared), prepared, fulfill);
    expect(await queues.job(RECEIVING, TX_JOB.cancelReceiver, prepared.transferKey)).toBeUndefined();
  });

  it("alerts loudly and decides nothing when the receiving side completed on chain but its logs cannot be found", async () => {
    const prepared = await userPrepare(s, { user: USER });
    await userFulfill(prepared, await routerPrepareReceiver(s, prepared));
    await s.receiving.anvil.mine(5);
    const config = pollerConfig(s, prefix);
    // A search window of one block: the fulfill is older than that.
    await startOne(config, SENDING, { startBlock: prepared.receipt.blockNumber, reconcileSearchBlocks: 1 });
    await startOne(config, RECEIVING, { startBlock: (await s.receiving.provider.getBlockNumber()) + 1 });

    const alert = await waitFor("reconcile alert", async () =>
      logs
        .lines()
        .find((l) => l.at === "poller.reconcile" && l.transferKey === prepared.transferKey && l.level === "error"),
    );
    expect(alert).toMatchObject({
      side: "receiving",
      sideChainId: RECEIVING,
      verdict: "store-behind",
      storedStatus: null,
    });
    expect(await queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey)).toBeUndefined();
    expect(await queues.job(SENDING, TX_JOB.cancelSender, prepared.transferKey)).toBeUndefined();
  });

  it("never cancels an expired receiving side that is fulfilled on chain: reads both sides first, and claims", async () => {
    const config = pollerConfig(s, prefix);
    running.push(...(await startPollers(s, config, logs, { reconcileIntervalMs: 10 * 60_000 })));
    const prepared = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver job", () => queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    await syncedPast(queues, prefix, RECEIVING, receiverPrepare.blockNumber);

    // The running receiving poller skips the next blocks (a cursor a little ahead: it waits for the head to pass).
    const skipTo = (await s.receiving.provider.getBlockNumber()) + 3;
    await queues.redis.set(pollerCursorKey(prefix, RECEIVING), String(skipTo));
    const fulfill = await userFulfill(prepared, receiverPrepare);
    expect(fulfill.receipt.blockNumber).toBeLessThanOrEqual(skipTo);
    // Last in this file: the receiving chain's clock moves 3 days on. The receiving side is expired by the store's view.
    await s.receiving.anvil.increaseTime(3 * 86400);
    await s.receiving.anvil.mine(4);

    expectClaim(await fulfillJob(prepared), prepared, fulfill);
    expect(await queues.job(RECEIVING, TX_JOB.cancelReceiver, prepared.transferKey)).toBeUndefined();
  });
});

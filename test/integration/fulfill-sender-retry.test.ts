import { Queue, UnrecoverableError, Worker } from "bullmq";
import { ZeroAddress } from "ethers";
import { enqueueOnce } from "../../services/poller/plan-executor";
import type { PollerContext } from "../../services/poller/context";
import { hashJobData } from "../../services/submitter/job/send-job-of";
import type { TxRecord } from "../../services/submitter/send/tx-record";
import { completedVariantDigest } from "../../shared/protocol/digests";
import { TX_JOB, TX_JOB_DEFAULTS, txJobId, txQueueName, type FulfillSenderJobData } from "../../shared/queues";
import { txRecordKey } from "../../shared/coordination/keys";
import { liveChildPids } from "../harness/child-process";
import {
  RECEIVING,
  SENDING,
  keyOf,
  makeTransfer,
  receiverTxData,
  routerBalance,
  startLifecycleStack,
  startRun,
  userFulfill,
  variantOf,
  type LifecycleRun,
  type LifecycleStack,
} from "./lifecycle-fixture";
import { waitFor } from "../harness/wait";

/**
 * A failed claim (fulfill-sender) used to end for good (alerted once, never retried). It is
 * now parked and run again until the sending side's expiry, and the poller retries a failed claim job.
 */
describe("fulfill-sender: a failed claim is retried until the sending expiry", () => {
  let s: LifecycleStack;
  let run: LifecycleRun | undefined;

  beforeAll(async () => {
    s = await startLifecycleStack();
  });

  afterEach(async () => {
    await run?.stop();
    run = undefined;
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("a reverted claim transaction is archived and the claim sent again, without using BullMQ attempts", async () => {
    const r = (run = await startRun(s, "direct"));
    const t = await makeTransfer(s, { mode: "direct" });
    const receiver = await receiverTxData(
      s,
      await r.finish(
        await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t)),
      ),
    );
    const fulfilled = await userFulfill(s, receiver);
    const data: FulfillSenderJobData = {
      chainId: SENDING,
      txData: t.txData,
      signature: fulfilled.signature,
      relayerFee: "0",
      callData: "0x",
      receiverFulfillTransactionHash: fulfilled.transactionHash,
    };
    // The claim's first transaction was mined and reverted (out of gas, a race): its record says so.
    const jobId = txJobId(TX_JOB.fulfillSender, keyOf(t));
    const reverted: TxRecord = {
      version: 3,
      jobId,
      jobName: TX_JOB.fulfillSender,
      chainId: SENDING,
      from: s.signerAddress,
      dataHash: hashJobData(TX_JOB.fulfillSender, data),
      call: { to: s.sending.deployment.transactionManager, data: "0x", value: "0", gasLimit: "21000" },
      nonce: 0,
      attempts: [],
      bumps: 0,
      status: "reverted",
      createdAtMs: Date.now(),
      updatedAtMs: Date.now(),
    };
    await r.redis.hset(txRecordKey(r.prefix, SENDING, jobId), "version", "3", "record", JSON.stringify(reverted));
    const before = await routerBalance(s.sending, s.signerAddress);

    const job = await r.queues
      .get(SENDING)
      ?.add(TX_JOB.fulfillSender, data, { ...TX_JOB_DEFAULTS, attempts: 1, jobId });
    if (!job) throw new Error("no job");
    await waitFor("the claim to be parked", async () =>
      r.logs.lines().find((l) => l.at === "submitter.claim" && l.jobId === jobId && l.level === "warn"),
    );
    expect(await job.getState()).toBe("delayed");
    const claimed = await r.finish(job, 30_000);
    expect(claimed.noop).toBeUndefined();
    expect(await variantOf(s.sending, t.txData)).toBe(completedVariantDigest(t.txData.amount, t.txData.expiry));
    expect(await routerBalance(s.sending, s.signerAddress)).toBe(before + BigInt(t.txData.amount));
    const parked = r.logs.lines().find((l) => l.at === "submitter.claim" && l.jobId === jobId);
    expect(parked).toMatchObject({
      code: "TRANSACTION_REVERTED",
      archivedRecord: `${jobId}-reverted-3`,
      secondsToExpiry: expect.any(Number),
    });
    expect(
      JSON.parse((await r.redis.hget(txRecordKey(r.prefix, SENDING, `${jobId}-reverted-3`), "record")) ?? "{}"),
    ).toMatchObject({ status: "reverted" });
  }, 60_000);

  it("the poller retries a failed claim job whatever ended it, unless its reason is terminal", async () => {
    const r = (run = await startRun(s, "direct", { submitters: false }));
    const url = new URL(s.redisUrl);
    const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
    const queue = new Queue(txQueueName(SENDING), { connection, prefix: r.prefix });
    // A worker standing in for a claim that ended badly: first as unrecoverable on a transient read, then terminal.
    const reasons = ["RPC_ERROR: one bad eth_call", "SENDER_EXPIRED: the sending side expired"];
    const worker = new Worker(
      txQueueName(SENDING),
      async () => {
        throw new UnrecoverableError(reasons.shift() ?? "SENDER_EXPIRED: again");
      },
      { connection, prefix: r.prefix },
    );
    const alerts: string[] = [];
    const ctx = {
      chainId: SENDING,
      queueFor: () => queue,
      logger: r.logs.logger,
      alertOnce: async (id: string) => (alerts.includes(id) ? false : (alerts.push(id), true)),
    } as unknown as PollerContext;
    const t = await makeTransfer(s, { mode: "direct" });
    const plan = {
      name: TX_JOB.fulfillSender,
      chainId: SENDING,
      data: {
        chainId: SENDING,
        txData: t.txData,
        signature: "0x",
        relayerFee: "0",
        callData: "0x",
        receiverFulfillTransactionHash: ZeroAddress,
      },
    } as const;
    const meta = { transferKey: keyOf(t), source: "test" };
    try {
      expect(await enqueueOnce(ctx, plan, meta)).toBe("added");
      const jobId = txJobId(TX_JOB.fulfillSender, keyOf(t));
      await waitFor("the first failure", async () =>
        (await queue.getJobState(jobId)) === "failed" ? true : undefined,
      );
      expect(await enqueueOnce(ctx, plan, meta)).toBe("retried");
      await waitFor("the terminal failure", async () =>
        (await queue.getJob(jobId))?.failedReason?.startsWith("SENDER_EXPIRED") &&
        (await queue.getJobState(jobId)) === "failed"
          ? true
          : undefined,
      );
      expect(await enqueueOnce(ctx, plan, meta)).toBe("failed");
      expect(alerts).toEqual([`job-${jobId}`]);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

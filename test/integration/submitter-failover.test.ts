import { randomUUID } from "node:crypto";
import { Queue, QueueEvents, type Job } from "bullmq";
import { Wallet } from "ethers";
import type { SenderTermStuckError } from "../../services/submitter/send/errors";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { loadConfig } from "../../shared/config";
import {
  TX_JOB,
  TX_JOB_DEFAULTS,
  isTxJobProgress,
  txJobId,
  txQueueName,
  workerConnection,
  type TxJobData,
  type TxJobProgress,
  type TxJobResult,
} from "../../shared/queues";
import { liveChildPids } from "../harness/child-process";
import { startSentinelGroup, type SentinelGroup } from "../harness/redis-sentinel";
import { CHAIN_ID, startSubmitterStack, submitterConfig, tokenBalance, type SubmitterStack } from "./submitter-fixture";
import { waitFor } from "../harness/wait";
import { captureLogs, type LogCapture } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * A sender with a job in flight rides a Redis Sentinel failover (#15): the primary is SIGKILLed while the job waits
 * for its transaction to be mined, Sentinel promotes the replica, the sender's lease lapses meanwhile, and the
 * sender ends its term by itself: no SENDER_TERM_STUCK (under PM2, no exit and no restart). Before the fix its
 * worker's pause waited for ever on the blocking connection, disconnected while it waited to reconnect
 * (services/submitter/lease/job-runs.ts). The job completes exactly once, and a job enqueued afterwards is sent
 * at the next nonce: both processes reconnected to the promoted primary by themselves.
 */
describe("submitter: a Redis Sentinel failover with a job in flight", () => {
  let group: SentinelGroup;
  let s: SubmitterStack;
  const running: RunningSubmitter[] = [];
  let queue: Queue<TxJobData, TxJobResult> | undefined;
  let events: QueueEvents | undefined;

  beforeAll(async () => {
    group = await startSentinelGroup({ replicas: 1, sentinels: 3 });
    s = await startSubmitterStack();
  }, 120_000);

  afterAll(async () => {
    await s?.chain.anvil.setAutomine(true).catch(() => undefined);
    for (const r of running) await r.stop();
    await events?.close();
    await queue?.close();
    await s?.stack.stop();
    await group?.stop();
    expect(liveChildPids()).toEqual([]);
  }, 60_000);

  it("the sender ends its term without getting stuck; the job is sent once, the next one at the next nonce", async () => {
    const prefix = uniquePrefix();
    const raw = submitterConfig(s, prefix).raw;
    delete raw.redisUrl;
    raw.redis = group.config;
    const { config } = loadConfig(raw, {});
    // The test's own producer and event reader follow the primary through the sentinels too.
    const connection = workerConnection(group.config);
    queue = new Queue<TxJobData, TxJobResult>(txQueueName(CHAIN_ID), { connection, prefix });
    events = new QueueEvents(txQueueName(CHAIN_ID), { connection, prefix });
    // The failover's connection errors are expected; an unheard `error` event would throw.
    queue.on("error", () => undefined);
    events.on("error", () => undefined);
    await events.waitUntilReady();
    const progress = new Map<string, TxJobProgress>();
    events.on("progress", ({ jobId, data }) => {
      if (isTxJobProgress(data)) progress.set(jobId, data);
    });

    const stuck: SenderTermStuckError[] = [];
    const start = async (logs: LogCapture): Promise<RunningSubmitter> => {
      const submitter = await startSubmitter({
        config,
        logger: logs.logger,
        chainId: CHAIN_ID,
        // Shortened polls (default 1 s) so mined receipts are seen quickly; the lease, its end bound and
        // Sentinel's reconnects run at the shipped defaults.
        options: { pollIntervalMs: 50, providerOptions: { headRefreshMs: 200 }, onStuck: (e) => stuck.push(e) },
      });
      running.push(submitter);
      return submitter;
    };
    const senderLogs = captureLogs();
    const standbyLogs = captureLogs();
    const sender = await start(senderLogs);
    const standby = await start(standbyLogs);
    expect([sender.role(), standby.role()]).toEqual(["sender", "standby"]);

    const addJob = (recipient: string, amount: string): Promise<Job<TxJobData, TxJobResult>> => {
      const requestId = randomUUID();
      const data = {
        chainId: CHAIN_ID,
        requestId,
        assetId: s.chain.deployment.token,
        amount,
        recipientAddress: recipient,
      };
      return (queue as Queue<TxJobData, TxJobResult>).add(TX_JOB.removeLiquidity, data, {
        ...TX_JOB_DEFAULTS,
        jobId: txJobId(TX_JOB.removeLiquidity, requestId),
      });
    };
    const nonceBefore = await s.chain.provider.getTransactionCount(s.signer, "latest");
    // Not mined until after the failover: the job stays in flight, waiting for its receipt, through it.
    await s.chain.anvil.setAutomine(false);
    const recipient = Wallet.createRandom().address;
    const job = await addJob(recipient, "41");
    const sent = await waitFor("the job's broadcast", () => progress.get(job.id ?? ""));
    expect(sent.nonce).toBe(nonceBefore);

    const killedAtMs = Date.now();
    const oldPort = await group.killPrimary();
    await group.waitForPromotion(oldPort);
    const promotedMs = Date.now() - killedAtMs;
    // The lease lapsed while Redis was away: the sender's renewal is refused on the promoted primary.
    await waitFor("the sender to lose its lease", () => senderLogs.find("submitter.lease", "sender lease lost")[0]);
    const ended = await waitFor(
      "the sender's term to end (or be stuck)",
      () => senderLogs.find("submitter.lease", "sender term ended")[0] ?? (stuck.length > 0 && { stuck }),
      30_000,
    );
    const endedMs = Date.now() - killedAtMs;
    expect(stuck).toEqual([]);
    // The promoted replica shows a stall's picture (the key gone, the term counter replicated) on another server:
    // never resumed (shared/redis/scripts/lease-resume.lua), the term ends as before.
    expect(senderLogs.find("submitter.lease", "was resumed")).toEqual([]);
    expect(ended).toMatchObject({ message: "sender term ended" });
    process.stdout.write(
      `submitter failover: replica promoted ${promotedMs} ms after the SIGKILL; the old sender's term ended at ${endedMs} ms\n`,
    );

    await s.chain.anvil.setAutomine(true);
    await s.chain.anvil.mine(1);
    const result = await job.waitUntilFinished(events, 30_000);
    expect(result.transactionHash).toBe(sent.transactionHash);
    expect(await tokenBalance(s, recipient)).toBe(41n);

    // Both processes are on the promoted primary: whichever holds the lease sends the next job at the next nonce.
    const nextRecipient = Wallet.createRandom().address;
    const next = await addJob(nextRecipient, "7");
    const nextResult = await next.waitUntilFinished(events, 30_000);
    expect(progress.get(next.id ?? "")?.nonce).toBe(nonceBefore + 1);
    expect(await tokenBalance(s, nextRecipient)).toBe(7n);
    await expect(s.chain.provider.getTransactionCount(s.signer, "latest")).resolves.toBe(nonceBefore + 2);
    // One transaction per job (a new holder may send the stored bytes again, never other ones).
    const broadcasts = [senderLogs, standbyLogs].flatMap((l) => l.find("submitter.send", "transaction broadcast"));
    expect(new Set(broadcasts.map((l) => l.transactionHash))).toEqual(
      new Set([result.transactionHash, nextResult.transactionHash]),
    );
    expect(stuck).toEqual([]);
    expect([sender.isReady(), standby.isReady()]).toEqual([true, true]);
    expect([sender.role(), standby.role()].sort()).toEqual(["sender", "standby"]);
  }, 120_000);
});

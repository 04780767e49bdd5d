import { randomUUID } from "node:crypto";
import { Queue, QueueEvents } from "bullmq";
import { Wallet } from "ethers";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { loadConfig } from "../../shared/config";
import {
  TX_JOB,
  producerConnection,
  txJobId,
  txJobOptions,
  txQueueName,
  type TxJobData,
  type TxJobResult,
} from "../../shared/queues";
import { Redis } from "ioredis";
import { liveChildPids } from "../harness/child-process";
import { startRedis, type RedisServer } from "../harness/redis";
import { startSentinelGroup, type SentinelGroup } from "../harness/redis-sentinel";
import { waitFor } from "../harness/wait";
import {
  CHAIN_ID,
  startSubmitterStack,
  submitterConfig,
  tokenBalance,
  type SubmitterStack,
} from "../integration/submitter-fixture";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * "A withdrawal is paid twice after a Redis failover". `redis.minReplicas: 1` with two replicas, as
 * docs/scaling.md allowed: a withdrawal's writes are acknowledged by one replica, its transaction is mined and the
 * job completes. The primary and that replica are then lost, and Sentinel promotes the other replica, which holds
 * the job `waiting` with no send record. WAIT proves that n replicas received a write, not that the one Sentinel
 * promotes did; the re-run must find its withdrawal on chain and pay nothing more.
 * Real primary, two replicas and three sentinels (test/harness/redis-sentinel.ts); replica acknowledgement at its
 * shipped timeout; Sentinel's down-after shortened to 1 s by the harness so the failover takes seconds.
 */
describe("fault: a Redis failover to a replica without the send record does not pay a withdrawal twice", () => {
  let group: SentinelGroup;
  let s: SubmitterStack;
  let submitter: RunningSubmitter | undefined;
  let stopped: number | undefined;
  let replacement: RedisServer | undefined;

  beforeAll(async () => {
    group = await startSentinelGroup({ replicas: 2, sentinels: 3 });
    s = await startSubmitterStack();
  }, 120_000);

  afterAll(async () => {
    if (stopped !== undefined) process.kill(stopped, "SIGCONT");
    await submitter?.stop();
    await s?.stack.stop();
    await replacement?.stop();
    await group?.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("minReplicas 1, two replicas: the promoted replica re-runs the completed withdrawal, and the recipient is paid once", async () => {
    const prefix = uniquePrefix();
    const raw = submitterConfig(s, prefix).raw;
    delete raw.redisUrl;
    raw.redis = { ...group.config, minReplicas: 1 };
    const config = loadConfig(raw, {}).config;
    const oldPrimary = await group.primaryPort();
    const [acking, behind] = [...group.nodes].filter(([port]) => port !== oldPrimary);
    if (!acking || !behind) throw new Error("sentinel group without two replicas");

    const connection = producerConnection(`redis://127.0.0.1:${oldPrimary}`);
    const queue = new Queue<TxJobData, TxJobResult>(txQueueName(CHAIN_ID), { connection, prefix });
    const events = new QueueEvents(txQueueName(CHAIN_ID), {
      connection: { ...connection, maxRetriesPerRequest: null },
      prefix,
    });
    const plain = new Redis(connection);
    await events.waitUntilReady();
    const recipient = Wallet.createRandom().address;
    const requestId = randomUUID();
    const data = {
      chainId: CHAIN_ID,
      assetId: s.chain.deployment.token,
      amount: "47",
      recipientAddress: recipient,
      requestId,
    };
    const job = await queue.add(
      TX_JOB.removeLiquidity,
      data,
      txJobOptions(TX_JOB.removeLiquidity, txJobId(TX_JOB.removeLiquidity, requestId)),
    );
    // Both replicas hold the job. Then one of them is cut off: frozen (SIGSTOP), and its link closed by the primary so
    // nothing more reaches it, not even through its socket buffer; the other reconnects and acknowledges what follows.
    expect(Number(await plain.call("WAIT", 2, 5_000))).toBe(2);
    process.kill(behind[1].pid, "SIGSTOP");
    stopped = behind[1].pid;
    await plain.call("CLIENT", "KILL", "TYPE", "replica");
    await waitFor("the acknowledging replica back", async () => Number(await plain.call("WAIT", 1, 100)) >= 1);

    const logs = captureLogs();
    submitter = await startSubmitter({ config, logger: logs.logger, chainId: CHAIN_ID });
    const first = await job.waitUntilFinished(events, 60_000);
    expect(await tokenBalance(s, recipient)).toBe(47n);
    await events.close();
    await queue.close();
    plain.disconnect();

    // The primary and the replica that acknowledged are lost; the one cut off comes back and is promoted.
    process.kill(group.nodes.get(oldPrimary)?.pid ?? 0, "SIGKILL");
    process.kill(acking[1].pid, "SIGKILL");
    process.kill(behind[1].pid, "SIGCONT");
    stopped = undefined;
    const promoted = await group.waitForPromotion(oldPrimary, 60_000);
    expect(promoted).toBe(behind[0]);
    // A new, empty replica replaces the lost ones (as an operator would), so minReplicas 1 can be met again.
    replacement = await startRedis();
    const toReplacement = new Redis(replacement.url);
    await toReplacement.call("REPLICAOF", "127.0.0.1", String(promoted));
    toReplacement.disconnect();

    // There the job is back in a state that runs it again, with no send record.
    const promotedQueue = new Queue<TxJobData, TxJobResult>(txQueueName(CHAIN_ID), {
      connection: producerConnection(`redis://127.0.0.1:${promoted}`),
      prefix,
    });
    try {
      const rerun = await waitFor(
        "the submitter to finish the job again on the promoted replica",
        async () => {
          const again = await promotedQueue.getJob(job.id ?? "");
          return again?.finishedOn ? again : undefined;
        },
        90_000,
      );
      expect(rerun.name).toBe(TX_JOB.removeLiquidity);
      expect(await tokenBalance(s, recipient)).toBe(47n);
      expect(await rerun.getState()).toBe("completed");
      expect(rerun.returnvalue).toMatchObject({ transactionHash: first.transactionHash, noop: true });
      const rerunLines = logs.lines().filter((l) => l.jobId === job.id && l.at === "submitter.removeLiquidity");
      expect(rerunLines.map((l) => l.message)).toContain(
        "the withdrawal is already on chain (its send record is gone): sending nothing",
      );
    } finally {
      await promotedQueue.close();
    }
  }, 240_000);
});

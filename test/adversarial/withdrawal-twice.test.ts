import { randomUUID } from "node:crypto";
import { Queue, UnrecoverableError, Worker, type Job } from "bullmq";
import { Wallet } from "ethers";
import {
  createRemoveLiquidityOperation,
  type RemoveLiquidityOperation,
} from "../../services/admin/operations/remove-liquidity";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { TX_JOB, txJobId, txQueueName, workerConnection, type TxJobData, type TxJobResult } from "../../shared/queues";
import { txRecordKey } from "../../shared/coordination/keys";
import { startRpcProxy, type RpcProxy } from "../harness/rpc-proxy";
import { liveChildPids } from "../harness/child-process";
import { waitFor } from "../harness/wait";
import {
  CHAIN_ID,
  routerBalance,
  startSubmitterStack,
  submitterConfig,
  tokenBalance,
  txQueueClient,
  type SubmitterStack,
  type TxQueueClient,
} from "../integration/submitter-fixture";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * The router's one call the contract does not refuse a second time is a withdrawal. Each case is a way
 * found to make the router pay one twice, or pay one it never accepted; each asserts the recipient is paid once
 * (or never). Real anvil with the NXTP contracts, real redis-server, the real submitter at its shipped defaults.
 */
// One stack for both blocks: each case works under a Redis prefix of its own, and pays recipients of its own.
let s: SubmitterStack;

beforeAll(async () => {
  s = await startSubmitterStack();
});

afterAll(async () => {
  await s?.stack.stop();
  expect(liveChildPids()).toEqual([]);
});

describe("adversarial: a withdrawal is paid at most once", () => {
  let client: TxQueueClient | undefined;
  let submitter: RunningSubmitter | undefined;
  let proxy: RpcProxy | undefined;

  afterEach(async () => {
    await submitter?.stop();
    submitter = undefined;
    await client?.close();
    client = undefined;
    await proxy?.down();
    proxy = undefined;
  });

  const start = async (providers?: string[]) => {
    const prefix = uniquePrefix();
    client = await txQueueClient(s.redisUrl, prefix);
    const logs = captureLogs();
    const { config } = submitterConfig(s, prefix, providers ? { providers } : {});
    submitter = await startSubmitter({ config, logger: logs.logger, chainId: CHAIN_ID });
    return { prefix, client, logs };
  };

  const finished = (job: Job<TxJobData, TxJobResult>): Promise<TxJobResult> =>
    job.waitUntilFinished(client?.events ?? (undefined as never), 60_000);

  it("lagging receipts: a mined withdrawal is never reported failed, and an identical request does not pay again", async () => {
    // One endpoint whose receipts lag behind its transaction count (a load-balanced RPC with a slow backend): every
    // receipt is hidden, so the withdrawal's nonce looks taken by someone else and that is never proven.
    proxy = await startRpcProxy(s.chain.anvil.url);
    proxy.hideReceipts(true);
    const { prefix, client: c, logs } = await start([proxy.url]);
    const recipient = Wallet.createRandom().address;
    const request = { chainId: CHAIN_ID, assetId: s.chain.deployment.token, amount: "41", recipientAddress: recipient };
    // The admin API's own operation (content window, takeover rule); its queue gives jobs 2 attempts instead of 8:
    // a run that spends an attempt then reaches `failed` in seconds, not 4 minutes of backoff. A run that spends
    // none (the safe behaviour) is unaffected by the count.
    const shortAttempts = new Proxy(c.queue, {
      get(target, key) {
        if (key === "add") {
          return (name: string, data: TxJobData, opts: object) => target.add(name, data, { ...opts, attempts: 2 });
        }
        const value: unknown = Reflect.get(target, key);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as Queue;
    const operation: RemoveLiquidityOperation = createRemoveLiquidityOperation({
      queueFor: () => shortAttempts,
      queueEventsFor: () => c.events,
      readUnlockedBalance: () => routerBalance(s, s.signer, s.chain.deployment.token),
      redis: c.redis,
      redisPrefix: prefix,
      logger: captureLogs().logger,
    });
    const first = await operation(request, { requestId: "lagging-first" });
    const firstJob = await c.queue.getJob(txJobId(TX_JOB.removeLiquidity, "lagging-first"));
    // Two runs decided (each logs one outcome): before the fix the second one was the job's last attempt.
    await waitFor(
      "two runs of the withdrawal to end on the unproven taken nonce",
      async () =>
        logs.lines().filter((l) => l.at === "submitter.job" && l.code === "NONCE_TAKEN_UNCONFIRMED").length >= 2 ||
        undefined,
      120_000,
    );
    expect(await tokenBalance(s, recipient)).toBe(41n);
    expect(await firstJob?.getState()).not.toBe("failed");

    // An identical request under another request id, inside the 10-minute window.
    const second = await operation(request, { requestId: "lagging-second" });
    expect(second.transactionHash).toBe(first.transactionHash);
    // The answer's transaction is mined (read from anvil itself, not the lagging proxy): the recipient got 41 once.
    await waitFor(
      "the answered withdrawal mined",
      async () => (await s.chain.provider.getTransactionReceipt(second.transactionHash)) ?? undefined,
    );
    expect(await tokenBalance(s, recipient)).toBe(41n);

    // Once the receipts show, the first job completes with its own transaction.
    proxy.hideReceipts(false);
    const result = await finished(firstJob as Job<TxJobData, TxJobResult>);
    expect(result.transactionHash).toBe(first.transactionHash);
    expect(await tokenBalance(s, recipient)).toBe(41n);
  }, 240_000);

  it("a job added from the dashboard (an id that is not the router's own) is refused, and pays no one", async () => {
    const { client: c } = await start();
    const recipient = Wallet.createRandom().address;
    const data = {
      chainId: CHAIN_ID,
      assetId: s.chain.deployment.token,
      amount: "43",
      recipientAddress: recipient,
      requestId: "dash",
    };
    const before = await routerBalance(s, s.signer, s.chain.deployment.token);
    // bull-board's "add job": any name, data and options; here its own id, and BullMQ's counter id.
    const named = await c.queue.add(TX_JOB.removeLiquidity, data, { jobId: "dashboard-added" });
    const counted = await c.queue.add(TX_JOB.removeLiquidity, { ...data, requestId: "dash-2" });
    for (const job of [named, counted]) {
      await expect(finished(job)).rejects.toThrow(/INVALID_JOB/);
    }
    expect(await tokenBalance(s, recipient)).toBe(0n);
    expect(await routerBalance(s, s.signer, s.chain.deployment.token)).toBe(before);
  }, 120_000);

  it("a withdrawal's send record is kept as long as its job (it never expires)", async () => {
    const { prefix, client: c } = await start();
    const job = await c.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "44",
      recipientAddress: Wallet.createRandom().address,
    });
    await finished(job);
    // -1: no TTL. A completed job is removed only when another job of the queue completes after its 31 days.
    expect(await c.redis.pttl(txRecordKey(prefix, CHAIN_ID, job.id ?? ""))).toBe(-1);
  }, 120_000);

  it("a completed withdrawal retried (as the dashboard allows) after its send record is gone pays once", async () => {
    const { prefix, client: c, logs } = await start();
    const recipient = Wallet.createRandom().address;
    const job = await c.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "45",
      recipientAddress: recipient,
    });
    const first = await finished(job);
    expect(await tokenBalance(s, recipient)).toBe(45n);
    // The record is gone (a Redis failover to a replica without it, or, before, its 31-day TTL); the job is not.
    await c.redis.del(txRecordKey(prefix, CHAIN_ID, job.id ?? ""));
    await job.retry("completed");
    await waitFor("the retried job to finish again", async () =>
      logs.lines().find((l) => l.at === "submitter.job" && l.jobId === job.id && l.outcome === "completed" && l.noop),
    );
    // The processor logs its outcome before BullMQ stores the job's return value: wait for the stored one.
    const again = await waitFor("the retried job's stored result", async () => {
      const stored = await c.queue.getJob(job.id ?? "");
      return stored?.returnvalue ? stored : undefined;
    });
    expect(again.returnvalue).toMatchObject({ transactionHash: first.transactionHash, noop: true });
    expect(await tokenBalance(s, recipient)).toBe(45n);
  }, 120_000);
});

/**
 * The admin API's takeover of a failed identical request: only when that job has nothing on chain. A worker plays a
 * submitter that broadcast (send record `sending`) and then failed: the transaction may still be mined.
 */
describe("adversarial: an identical request does not take over a failed withdrawal that may be mined", () => {
  let client: TxQueueClient | undefined;
  let worker: Worker | undefined;

  afterAll(async () => {
    await worker?.close();
    await client?.close();
  });

  it("the second request is answered by the failed job's transaction, and nothing is enqueued", async () => {
    const prefix = uniquePrefix();
    client = await txQueueClient(s.redisUrl, prefix);
    const c = client;
    const hash = `0x${"ab".repeat(32)}`;
    worker = new Worker(
      txQueueName(CHAIN_ID),
      async (job) => {
        await c.redis.hset(
          txRecordKey(prefix, CHAIN_ID, job.id ?? ""),
          "record",
          JSON.stringify({ jobId: job.id, status: "sending", nonce: 0, attempts: [{ hash, nonce: 0 }] }),
        );
        await job.updateProgress({ stage: "broadcast", transactionHash: hash, nonce: 0 });
        throw new UnrecoverableError("NONCE_TAKEN_UNCONFIRMED: the receipts lag");
      },
      { connection: workerConnection(s.redisUrl), prefix },
    );
    const operation = createRemoveLiquidityOperation({
      queueFor: () => c.queue,
      queueEventsFor: () => c.events,
      readUnlockedBalance: async () => 10n ** 24n,
      redis: c.redis,
      redisPrefix: prefix,
      logger: captureLogs().logger,
    });
    const request = {
      chainId: CHAIN_ID,
      assetId: s.chain.deployment.token,
      amount: "46",
      recipientAddress: Wallet.createRandom().address,
    };
    await operation(request, { requestId: `first-${randomUUID()}` });
    const [failed] = await waitFor("the first job failed", async () => {
      const jobs = await c.queue.getJobs(["failed"]);
      return jobs.length === 1 ? jobs : undefined;
    });
    const second = await operation(request, { requestId: `second-${randomUUID()}` });
    expect(second.transactionHash).toBe(hash);
    const all = await c.queue.getJobs(["waiting", "prioritized", "active", "delayed", "completed", "failed"]);
    expect(all.map((j) => j.id)).toEqual([failed?.id]);
  }, 60_000);
});

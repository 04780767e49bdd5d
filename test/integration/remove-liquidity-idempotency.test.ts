import { randomUUID } from "node:crypto";
import { Queue, QueueEvents, UnrecoverableError, Worker } from "bullmq";
import IORedis from "ioredis";
import {
  createRemoveLiquidityOperation,
  type RemoveLiquidityOperation,
} from "../../services/admin/operations/remove-liquidity";
import type { RemoveLiquidityRequest } from "../../services/admin/types";
import { TX_JOB, producerConnection, txJobId, txQueueName, workerConnection } from "../../shared/queues";
import { startRedis, type RedisServer } from "../harness/redis";
import { captureLogs } from "../harness/logs";

const CHAIN_ID = 1337;
const TX_HASH = `0x${"cd".repeat(32)}`;
const REQUEST: RemoveLiquidityRequest = {
  chainId: CHAIN_ID,
  assetId: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
  amount: "1000",
  recipientAddress: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
};

/**
 * A remove-liquidity retried after a 504 without the first X-Request-Id (so under a new,
 * generated request id) used to enqueue a second job and withdraw twice. Identical requests within the window
 * are now one withdrawal. Real redis-server and BullMQ; a worker plays the submitter.
 */
describe("remove-liquidity is idempotent by content", () => {
  let server: RedisServer;
  let prefix: string;
  let queue: Queue;
  let events: QueueEvents;
  let plain: IORedis;
  let worker: Worker | undefined;
  let unlocked: bigint;

  const operation = (broadcastTimeoutMs: number): RemoveLiquidityOperation =>
    createRemoveLiquidityOperation({
      queueFor: () => queue,
      queueEventsFor: () => events,
      readUnlockedBalance: async () => unlocked,
      redis: plain,
      redisPrefix: prefix,
      broadcastTimeoutMs,
      logger: captureLogs().logger,
    });
  const jobCount = async (): Promise<number> =>
    Object.values(
      await queue.getJobCounts("waiting", "prioritized", "active", "delayed", "completed", "failed"),
    ).reduce((a, b) => a + b, 0);
  const startWorker = (fail = false): Worker =>
    new Worker(
      txQueueName(CHAIN_ID),
      async (job) => {
        if (fail) throw new UnrecoverableError("RPC_ERROR: refused");
        await job.updateProgress({ stage: "broadcast", transactionHash: TX_HASH, nonce: 0 });
        return { transactionHash: TX_HASH, blockNumber: 1 };
      },
      { connection: workerConnection(server.url), prefix },
    );

  beforeAll(async () => {
    server = await startRedis();
  });

  afterAll(async () => {
    await server.stop();
  });

  beforeEach(async () => {
    prefix = `test-${randomUUID()}`;
    unlocked = 10n ** 24n;
    queue = new Queue(txQueueName(CHAIN_ID), { connection: producerConnection(server.url), prefix });
    events = new QueueEvents(txQueueName(CHAIN_ID), {
      connection: { ...producerConnection(server.url), maxRetriesPerRequest: null },
      prefix,
    });
    await queue.waitUntilReady();
    await events.waitUntilReady();
    plain = new IORedis({ ...producerConnection(server.url), enableOfflineQueue: true });
  });

  afterEach(async () => {
    await worker?.close();
    worker = undefined;
    await queue.obliterate({ force: true });
    await events.close();
    await queue.close();
    plain.disconnect();
  });

  it("a retry after a 504 under another request id waits on the first job: one job, the first one's hash", async () => {
    const removeLiquidity = operation(300);
    await expect(removeLiquidity(REQUEST, { requestId: "first-try" })).rejects.toMatchObject({
      code: "BROADCAST_TIMEOUT",
    });
    await expect(removeLiquidity(REQUEST, { requestId: randomUUID() })).rejects.toMatchObject({
      code: "BROADCAST_TIMEOUT",
      context: { jobId: txJobId(TX_JOB.removeLiquidity, "first-try") },
    });
    expect(await jobCount()).toBe(1);

    worker = startWorker();
    await expect(operation(10_000)(REQUEST, { requestId: randomUUID() })).resolves.toEqual({
      transactionHash: TX_HASH,
    });
    expect(await jobCount()).toBe(1);
    expect(await queue.getJob(txJobId(TX_JOB.removeLiquidity, "first-try"))).toBeDefined();
  });

  it("another amount or recipient is another withdrawal", async () => {
    worker = startWorker();
    const removeLiquidity = operation(10_000);
    await removeLiquidity(REQUEST, { requestId: "one" });
    await removeLiquidity({ ...REQUEST, amount: "1001" }, { requestId: "two" });
    await removeLiquidity(
      { ...REQUEST, recipientAddress: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" },
      { requestId: "three" },
    );
    expect(await jobCount()).toBe(3);
  });

  it("a failed job or a refused request does not hold the content: the next identical request enqueues", async () => {
    unlocked = 1n;
    await expect(operation(10_000)(REQUEST, { requestId: "too-early" })).rejects.toMatchObject({
      code: "INSUFFICIENT_LIQUIDITY",
    });
    unlocked = 10n ** 24n;
    worker = startWorker(true);
    await expect(operation(10_000)(REQUEST, { requestId: "fails" })).rejects.toMatchObject({
      code: "TRANSACTION_FAILED",
    });
    await worker.close();
    worker = startWorker();
    await expect(operation(10_000)(REQUEST, { requestId: "after-failure" })).resolves.toEqual({
      transactionHash: TX_HASH,
    });
    expect(await queue.getJob(txJobId(TX_JOB.removeLiquidity, "after-failure"))).toBeDefined();
    expect(await jobCount()).toBe(2);
  });
});

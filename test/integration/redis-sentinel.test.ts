import { randomUUID } from "node:crypto";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { loadConfig } from "../../shared/config";
import type { RedisConnectionConfig } from "../../shared/config/types";
import { producerConnection, redisOptions, workerConnection } from "../../shared/queues";
import { startSentinelGroup, type SentinelGroup } from "../harness/redis-sentinel";
import { waitFor } from "../harness/wait";

/**
 * The `redis` Sentinel config against a real group: a primary, one replica and three sentinels (redis-server
 * in --sentinel mode) on loopback. A plain client and a BullMQ worker and producer, all built by the
 * connection factory from the loaded config, keep working across a SIGKILL of the primary and the
 * promotion of the replica: a key written after the failover reads back, and a job added after it is processed.
 */
describe("Redis under Sentinel: every client follows a promotion by itself", () => {
  let group: SentinelGroup;
  let redis: RedisConnectionConfig;
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    // down-after-milliseconds 1 s (the harness default): a failover in seconds, not Sentinel's 30 s default.
    group = await startSentinelGroup({ replicas: 1, sentinels: 3 });
    redis = loadConfig(
      {
        adminToken: "a-long-enough-admin-token-for-tests",
        mnemonic: "test test test test test test test test test test test junk",
        chainConfig: { "1": { providers: ["http://127.0.0.1:1"] } },
        swapPools: [],
        redis: group.config,
      },
      {},
      { deployments: new Map([[1, { transactionManagerAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3" }]]) },
    ).config.redis;
  }, 60_000);

  afterAll(async () => {
    for (const close of closers.reverse()) {
      await close().catch(() => undefined);
    }
    await group.stop();
  });

  it("a plain client and a BullMQ worker survive a primary SIGKILL and promotion", async () => {
    const prefix = `sentinel-${randomUUID().slice(0, 8)}`;
    const plain = new Redis(workerConnection(redis));
    const producerRedis = new Redis({ ...producerConnection(redis), enableOfflineQueue: true });
    for (const client of [plain, producerRedis]) {
      // Errors while the primary is gone are expected; the assertions below are what counts.
      client.on("error", () => undefined);
      closers.push(async () => client.disconnect());
    }
    const queue = new Queue("tx-1", { connection: workerConnection(redis), prefix });
    queue.on("error", () => undefined);
    closers.push(() => queue.close());
    const processed: string[] = [];
    const worker = new Worker(
      "tx-1",
      async (job) => {
        processed.push(String(job.id));
        return "ok";
      },
      { connection: workerConnection(redis), prefix },
    );
    worker.on("error", () => undefined);
    closers.push(() => worker.close());

    // Before: everything works against the first primary.
    await plain.set(`${prefix}:before`, "1");
    await queue.add("job", {}, { jobId: "before-failover" });
    await waitFor("the job added before the failover", async () => processed.includes("before-failover") || undefined);
    const firstPrimary = await group.primaryPort();

    const killed = await group.killPrimary();
    expect(killed).toBe(firstPrimary);
    const promoted = await group.waitForPromotion(killed);
    expect(promoted).not.toBe(killed);

    // After: the same client objects, no restart. Writes land on the promoted node...
    await waitFor("a write through the plain client after the promotion", async () =>
      (await plain.set(`${prefix}:after`, "2").catch(() => null)) === "OK" ? true : undefined,
    );
    const direct = new Redis({ host: "127.0.0.1", port: promoted, maxRetriesPerRequest: 1 });
    closers.push(async () => direct.disconnect());
    expect(await direct.get(`${prefix}:after`)).toBe("2");
    // The replica had the pre-failover key: nothing written before the kill was lost in this (synced) case.
    expect(await direct.get(`${prefix}:before`)).toBe("1");

    // ...and a job added after the failover is processed by the worker created before it.
    await waitFor("adding a job after the promotion", () =>
      queue.add("job", {}, { jobId: "after-failover" }).then(
        () => true,
        () => undefined,
      ),
    );
    await waitFor("the job added after the failover", async () => processed.includes("after-failover") || undefined);
    expect(await producerRedis.ping()).toBe("PONG");
    expect(redisOptions(redis)).toMatchObject({ name: group.name, role: "master" });
  }, 90_000);
});

import type { Server } from "node:http";
import { Queue, UnrecoverableError, Worker } from "bullmq";
import { Redis } from "ioredis";
import { txQueueName } from "../../shared/queues";
import { txRecordKey } from "../../shared/coordination/keys";
import { closeServer } from "../../services/admin/listen";
import type { RouterStatus } from "../../services/admin/status";
import { startRedis, type RedisServer } from "../harness/redis";
import { OPS_ADMIN_TOKEN } from "../integration/metrics-fixture";
import { waitFor } from "../harness/wait";
import { dashboardActionsConfig, serveDashboard } from "../e2e/dashboard-fixture";
import { uniquePrefix } from "../harness/prefix";
import { basicAuth } from "../harness/basic-auth";

/**
 * The queue dashboard with `dashboardActions: true` (bull-board 9) attacked by an operator's browser or a
 * holder of the token: only the actions docs/operating.md lists pass (retry of a failed job whose effect is not
 * on chain, clean, promote). Every other bull-board write (add a job of any name and data, update a job's
 * data, empty, obliterate, pause or resume, retry completed jobs...) is refused with the admin's JSON error and
 * changes nothing in Redis: a `remove-liquidity` job added there would be sent without the API's balance check,
 * duplicate window or audit line, and a completed withdrawal retried would pay again. Every admin response
 * also refuses to be framed (clickjacking of the one-click actions).
 */
describe("operator surfaces: the queue dashboard", () => {
  let redis: RedisServer;
  let server: Server;
  let baseUrl: string;
  let queue: Queue;
  let client: Redis;
  let prefix: string;

  beforeAll(async () => {
    redis = await startRedis();
    prefix = uniquePrefix();
    const config = dashboardActionsConfig(redis.url, prefix);
    const connection = { host: "127.0.0.1", port: redis.port, maxRetriesPerRequest: null };
    queue = new Queue(txQueueName(1337), { connection, prefix });
    client = new Redis(connection);
    const withdrawal = { chainId: 1337, assetId: "0x0000000000000000000000000000000000000000", amount: "1" };
    await queue.add("remove-liquidity", { ...withdrawal, requestId: "done" }, { jobId: "completed-one" });
    await queue.add("remove-liquidity", { ...withdrawal, requestId: "f1" }, { jobId: "failed-one" });
    await queue.add("remove-liquidity", { ...withdrawal, requestId: "f2" }, { jobId: "failed-mined" });
    await queue.add("remove-liquidity", { ...withdrawal, requestId: "f3" }, { jobId: "failed-clean" });
    const worker = new Worker(
      txQueueName(1337),
      async (job) => {
        if (job.id === "completed-one") {
          return { transactionHash: "0x01" };
        }
        throw new UnrecoverableError("reverted");
      },
      { connection, prefix },
    );
    await waitFor("jobs finished", async () => {
      const counts = await queue.getJobCounts("completed", "failed");
      return counts.completed === 1 && counts.failed === 3 ? true : undefined;
    });
    await worker.close();
    // A failed job whose transaction is nonetheless confirmed (e.g. reported failed after it was mined).
    await client.hset(
      txRecordKey(prefix, 1337, "failed-mined"),
      "record",
      JSON.stringify({ jobId: "failed-mined", status: "confirmed", attempts: [], result: { transactionHash: "0x02" } }),
    );
    await queue.add("remove-liquidity", { ...withdrawal, requestId: "d1" }, { jobId: "delayed-one", delay: 3_600_000 });
    ({ server, baseUrl } = await serveDashboard({ config, queue, client, status: async () => ({}) as RouterStatus }));
  });

  afterAll(async () => {
    await closeServer(server);
    await queue.close();
    client.disconnect();
    await redis.stop();
  });

  /** A write from the dashboard's own page: authenticated, same origin (the CSRF guard lets it through). */
  const write = (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${baseUrl}/admin/queues${path}`, {
      method,
      headers: {
        ...basicAuth(OPS_ADMIN_TOKEN),
        origin: baseUrl,
        "sec-fetch-site": "same-origin",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  /** Every key of the router's prefix with its type and value, so any change at all shows. */
  async function snapshot(): Promise<string> {
    const keys = (await client.keys(`${prefix}*`)).sort();
    const entries: string[] = [];
    for (const key of keys) {
      const dump = await client.dumpBuffer(key);
      entries.push(`${key}=${dump?.toString("hex") ?? "gone"}`);
    }
    return entries.join("\n");
  }

  // Always three entries: a shorter row would make jest pass `done` as the body and wait for it.
  const forbidden: ReadonlyArray<[string, string, unknown]> = [
    [
      "POST",
      "/api/queues/tx-1337/add",
      {
        name: "remove-liquidity",
        data: {
          chainId: 1337,
          assetId: "0x0000000000000000000000000000000000000000",
          amount: "1000000000000000000000",
          recipientAddress: "0x000000000000000000000000000000000000dEaD",
          requestId: "dashboard",
        },
      },
    ],
    ["POST", "/api/queues/TX-1337/ADD/", { name: "remove-liquidity", data: {} }],
    ["PATCH", "/api/queues/tx-1337/failed-one/update-data", { data: { amount: "999" } }],
    ["PATCH", "/api/queues/tx-1337/delayed-one/delay", { delay: 0 }],
    ["PATCH", "/api/queues/tx-1337/delayed-one/priority", { priority: 1 }],
    ["PUT", "/api/queues/tx-1337/empty", undefined],
    ["PUT", "/api/queues/tx-1337/Empty", undefined],
    ["PUT", "/api/queues/tx-1337/obliterate", undefined],
    ["PUT", "/api/queues/pause", undefined],
    ["PUT", "/api/queues/resume", undefined],
    ["PUT", "/api/queues/tx-1337/pause", undefined],
    ["PUT", "/api/queues/tx-1337/resume", undefined],
    ["PUT", "/api/queues/tx-1337/concurrency", { concurrency: 100 }],
    ["PUT", "/api/queues/tx-1337/rate-limit", { max: 1, duration: 1 }],
    ["PUT", "/api/queues/tx-1337/rate-limit/release", undefined],
    ["PUT", "/api/queues/tx-1337/retry/completed", undefined],
    ["PUT", "/api/queues/tx-1337/retry/failed", undefined],
    ["PUT", "/api/queues/tx-1337/clean/delayed", undefined],
    ["PUT", "/api/queues/tx-1337/clean/wait", undefined],
    ["PUT", "/api/queues/tx-1337/failed-one/remove-unprocessed-children", undefined],
    ["POST", "/api/metrics/history/purge", undefined],
    ["DELETE", "/api/queues/tx-1337/failed-one", undefined],
  ];

  it.each(forbidden)("%s %s is refused with a JSON error and changes nothing in Redis", async (method, path, body) => {
    const before = await snapshot();
    const res = await write(method, path, body);
    expect(res.status).toBe(403);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      error: "dashboard_action_refused",
      message: expect.stringContaining("only retry of a failed job, clean and promote") as unknown,
      requestId: expect.any(String) as unknown,
    });
    expect(await snapshot()).toBe(before);
    expect(await queue.getJobCountByTypes("waiting", "prioritized")).toBe(0);
    expect(await queue.isPaused()).toBe(false);
  });

  it("refuses to retry a completed withdrawal, whatever bull-board allows", async () => {
    const before = await snapshot();
    const res = await write("PUT", "/api/queues/tx-1337/completed-one/retry");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: "retry_refused", message: expect.stringContaining("completed") });
    expect(await (await queue.getJob("completed-one"))?.getState()).toBe("completed");
    expect(await snapshot()).toBe(before);
  });

  it("refuses to retry a failed job whose transaction is confirmed", async () => {
    const res = await write("PUT", "/api/queues/tx-1337/failed-mined/retry");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: "retry_refused", message: expect.stringContaining("0x02") });
    expect(await (await queue.getJob("failed-mined"))?.getState()).toBe("failed");
  });

  it("still allows the documented actions: retry a failed job, promote, clean", async () => {
    expect((await write("PUT", "/api/queues/tx-1337/failed-one/retry")).status).toBeLessThan(300);
    expect(await (await queue.getJob("failed-one"))?.getState()).toBe("waiting");
    expect((await write("PUT", "/api/queues/tx-1337/delayed-one/promote")).status).toBeLessThan(300);
    expect(await (await queue.getJob("delayed-one"))?.getState()).toBe("waiting");
    expect((await write("PUT", "/api/queues/tx-1337/failed-clean/clean")).status).toBeLessThan(300);
    expect(await queue.getJob("failed-clean")).toBeUndefined();
  });

  it("every admin response forbids framing and does not announce Express", async () => {
    const auth = basicAuth(OPS_ADMIN_TOKEN);
    const responses = [
      await fetch(`${baseUrl}/admin/queues`, { headers: auth }),
      await fetch(`${baseUrl}/admin/queues/`, { headers: auth }),
      await fetch(`${baseUrl}/admin/queues/api/queues`, { headers: auth }),
      await fetch(`${baseUrl}/admin/queues`),
      await fetch(`${baseUrl}/status`, { headers: auth }),
      await fetch(`${baseUrl}/status`),
      await fetch(`${baseUrl}/ping`),
      await fetch(`${baseUrl}/no-such-route`),
      await write("PUT", "/api/queues/tx-1337/empty"),
    ];
    expect(responses[0].status).toBe(200);
    expect(responses[2].status).toBe(200);
    expect(responses[3].status).toBe(401);
    expect(responses[4].status).toBe(200);
    for (const res of responses) {
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(res.headers.get("x-powered-by")).toBeNull();
    }
  });
});

import type { Server } from "node:http";
import { Queue, UnrecoverableError, Worker } from "bullmq";
import { Redis } from "ioredis";
import { txQueueName } from "../../shared/queues";
import { closeServer } from "../../services/admin/listen";
import { startRedis, type RedisServer } from "../harness/redis";
import { OPS_ADMIN_TOKEN } from "../integration/metrics-fixture";
import { waitFor } from "../harness/wait";
import { dashboardActionsConfig, serveDashboard } from "./dashboard-fixture";
import { uniquePrefix } from "../harness/prefix";
import { basicAuth } from "../harness/basic-auth";

/**
 * The dashboard with `dashboardActions` on: a job can be retried from the board's own origin, while the same
 * request from another site is refused (403): the browser resends Basic credentials everywhere, so the origin
 * check is the CSRF defence. With actions off the board is read-only (405; see dashboard.test.ts).
 */
describe("queue dashboard actions", () => {
  let redis: RedisServer;
  let server: Server;
  let baseUrl: string;
  let queue: Queue;
  let client: Redis;

  beforeAll(async () => {
    redis = await startRedis();
    const prefix = uniquePrefix();
    const config = dashboardActionsConfig(redis.url, prefix);
    const connection = { host: "127.0.0.1", port: redis.port, maxRetriesPerRequest: null };
    queue = new Queue(txQueueName(1337), { connection, prefix });
    client = new Redis(connection);
    await queue.add("remove-liquidity", { chainId: 1337, requestId: "r1" }, { jobId: "failed-one" });
    const worker = new Worker(
      txQueueName(1337),
      async () => {
        throw new UnrecoverableError("reverted");
      },
      { connection, prefix },
    );
    await waitFor("job failed", async () =>
      (await (await queue.getJob("failed-one"))?.getState()) === "failed" ? true : undefined,
    );
    await worker.close();
    ({ server, baseUrl } = await serveDashboard({ config, queue, client }));
  });

  afterAll(async () => {
    await closeServer(server);
    await queue.close();
    client.disconnect();
    await redis.stop();
  });

  const retry = (headers: Record<string, string>): Promise<Response> =>
    fetch(`${baseUrl}/admin/queues/api/queues/tx-1337/failed-one/retry`, {
      method: "PUT",
      headers: { ...basicAuth(OPS_ADMIN_TOKEN), ...headers },
    });

  it("refuses a write from another site, or without an Origin", async () => {
    expect((await retry({ origin: "https://evil.example", "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect((await retry({})).status).toBe(403);
    expect((await fetch(`${baseUrl}/admin/queues/api/queues/tx-1337/failed-one/retry`, { method: "PUT" })).status).toBe(
      401,
    );
    expect(await (await queue.getJob("failed-one"))?.getState()).toBe("failed");
  });

  it("retries from the dashboard's own origin", async () => {
    const res = await retry({ origin: baseUrl, "sec-fetch-site": "same-origin" });
    expect(res.status).toBeLessThan(300);
    expect(await (await queue.getJob("failed-one"))?.getState()).toBe("waiting");
  });
});

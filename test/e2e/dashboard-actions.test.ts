import type { Server } from "node:http";
import { Queue, UnrecoverableError, Worker } from "bullmq";
import { Redis } from "ioredis";
import { loadConfig } from "../../shared/config";
import { txQueueName } from "../../shared/queues";
import { createApp } from "../../services/admin/app";
import { closeServer, listen } from "../../services/admin/listen";
import { startRedis, type RedisServer } from "../harness/redis";
import { captureLogs, uniquePrefix } from "../integration/submitter-fixture";
import { OPS_ADMIN_TOKEN, ANVIL_MNEMONIC, basicAuth } from "../integration/metrics-fixture";
import { waitFor } from "../harness/wait";

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
    const { config } = loadConfig(
      {
        adminToken: OPS_ADMIN_TOKEN,
        mnemonic: ANVIL_MNEMONIC,
        swapPools: [],
        redisUrl: redis.url,
        redisPrefix: prefix,
        dashboardActions: true,
        chainConfig: {
          "1": { providers: ["http://127.0.0.1:9"] },
          "1337": {
            providers: ["http://127.0.0.1:9"],
            transactionManagerAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
          },
        },
      },
      {},
    );
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
    const notUsed = async (): Promise<never> => {
      throw new Error("not used");
    };
    const app = createApp({
      config,
      logger: captureLogs().logger,
      signerAddress: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
      operations: { removeLiquidity: notUsed, cancelSender: notUsed },
      dashboard: { queues: [queue], redis: client },
    });
    server = await listen(app, "127.0.0.1", 0);
    const address = server.address();
    baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
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

import type { Server } from "node:http";
import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { createApp } from "../../services/admin/app";
import { listen } from "../../services/admin/listen";
import type { RouterStatus } from "../../services/admin/status";
import { ANVIL_MNEMONIC } from "../harness/anvil";
import { OPS_ADMIN_TOKEN } from "../integration/metrics-fixture";
import { captureLogs } from "../harness/logs";

/** A config with the dashboard's actions on and chain 1337's queue (its providers are never called). */
export function dashboardActionsConfig(redisUrl: string, prefix: string): RouterConfig {
  return loadConfig(
    {
      adminToken: OPS_ADMIN_TOKEN,
      mnemonic: ANVIL_MNEMONIC,
      swapPools: [],
      redisUrl,
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
  ).config;
}

/** The admin app over `queue`'s dashboard on a free loopback port; the money routes are not used. */
export async function serveDashboard(p: {
  config: RouterConfig;
  queue: Queue;
  client: Redis;
  status?: () => Promise<RouterStatus>;
}): Promise<{ server: Server; baseUrl: string }> {
  const notUsed = async (): Promise<never> => {
    throw new Error("not used");
  };
  const app = createApp({
    config: p.config,
    logger: captureLogs().logger,
    signerAddress: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    operations: { removeLiquidity: notUsed, cancelSender: notUsed },
    ...(p.status ? { status: p.status } : {}),
    dashboard: { queues: [p.queue], redis: p.client },
  });
  const server = await listen(app, "127.0.0.1", 0);
  const address = server.address();
  return { server, baseUrl: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}` };
}

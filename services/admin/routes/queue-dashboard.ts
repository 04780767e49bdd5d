import type { Queue } from "bullmq";
import type { Express, RequestHandler, Router } from "express";

export const DASHBOARD_PATH = "/admin/queues";

/**
 * bull-board over every transaction queue of every chain. Read-only (its write endpoints answer 405) unless
 * the config's `dashboardActions` is on; authentication and the CSRF guard are mounted in front by app.ts.
 * "Treat dashboard access as Redis access": job data is shown as stored, and it never holds a secret.
 * bull-board is loaded on the dashboard's first request: an admin whose dashboard is never opened does not
 * carry it (about 5 MB of the process's memory, docs/operating.md).
 */
export function queueDashboard(params: {
  queues: readonly Queue[];
  actions: boolean;
  environment: string;
}): RequestHandler {
  let board: Promise<Router> | undefined;
  return (req, res, next) => {
    board ??= buildBoard(params);
    board.then((router) => router(req, res, next), next);
  };
}

async function buildBoard(params: {
  queues: readonly Queue[];
  actions: boolean;
  environment: string;
}): Promise<Router> {
  const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }] = await Promise.all([
    import("@bull-board/api"),
    import("@bull-board/api/bullMQAdapter"),
    import("@bull-board/express"),
  ]);
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: params.queues.map(
      (queue) => new BullMQAdapter(queue, { readOnlyMode: !params.actions, allowRetries: params.actions }),
    ),
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: "Router queues",
        environment: { label: params.environment, color: params.environment === "mainnet" ? "#cc0000" : "#2b6cb0" },
      },
    },
  });
  const board = serverAdapter.getRouter() as Express;
  // bull-board's own Express app would announce itself again (X-Powered-By) on every dashboard response.
  board.disable("x-powered-by");
  return board;
}

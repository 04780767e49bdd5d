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
    res.setHeader("Content-Security-Policy", DASHBOARD_CSP);
    board ??= buildBoard(params);
    board.then((router) => router(req, res, next), next);
  };
}

/**
 * Nothing of the dashboard comes from outside the admin's host: bull-board's page links a web font from a third-party
 * site, which would tell that site (and anyone on the path) who operates a router and when its SRE opens the queues.
 * The link is removed from the page (selfHostedPage; the UI falls back to the system's sans-serif and monospace),
 * and the browser is told to load nothing from elsewhere in case a later bull-board adds another. Inline styles are
 * allowed: the page's loading screen and the UI's components set style attributes.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** bull-board's page without any `<link>` to another origin (its web font). */
export function selfHostedPage(html: string): string {
  return html.replace(/<link\b[^>]*\bhref=["']https?:\/\/[^"']*["'][^>]*>\s*/gi, "");
}

type ViewEngine = (
  path: string,
  options: object,
  callback: (err: Error | null | undefined, html?: string) => void,
) => void;

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
  // The page is rendered by bull-board's view engine (ejs); its output passes through selfHostedPage.
  const engines = (board as unknown as { engines: Record<string, ViewEngine | undefined> }).engines;
  const render = engines[".ejs"];
  if (render === undefined) {
    throw new Error("bull-board's view engine is not registered: the dashboard page cannot be served self-hosted");
  }
  board.engine("ejs", (path, options, callback) =>
    render(path, options, (err, html) => callback(err, html === undefined ? html : selfHostedPage(html))),
  );
  return board;
}

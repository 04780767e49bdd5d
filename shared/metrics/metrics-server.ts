import { createServer, type Server } from "node:http";
import type { Readiness } from "./readiness";

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The operational endpoints every process serves on its own port (unauthenticated, so loopback by default):
 * GET /metrics (Prometheus text), /healthz (alive: the event loop answers), /readyz (200 or 503 with the
 * per-check verdicts as JSON). Plain node:http: no framework on a path Prometheus hits every few seconds.
 */
export function startMetricsServer(params: {
  contentType: string;
  render(): Promise<string>;
  readiness: Readiness;
  host: string;
  port: number;
}): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD", "Content-Type": "text/plain" }).end("method not allowed\n");
      return;
    }
    if (path === "/healthz") {
      res.writeHead(200, { "Content-Type": "text/plain", "Cache-Control": "no-store" }).end("ok\n");
      return;
    }
    if (path === "/readyz") {
      void params.readiness.evaluate().then((report) => {
        res.writeHead(report.ready ? 200 : 503, { "Content-Type": "application/json", "Cache-Control": "no-store" });
        res.end(JSON.stringify(report));
      });
      return;
    }
    if (path === "/metrics") {
      params.render().then(
        (text) => res.writeHead(200, { "Content-Type": params.contentType }).end(text),
        () => res.writeHead(500, { "Content-Type": "text/plain" }).end("metrics collection failed\n"),
      );
      return;
    }
    res.writeHead(404, { "Content-Type": "text/plain" }).end("not found\n");
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: params.host, port: params.port }, () => {
      server.off("error", reject);
      const address = server.address();
      resolve({
        port: typeof address === "object" && address ? address.port : params.port,
        close: () => closeServer(server),
      });
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

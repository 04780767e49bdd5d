import { createServer, type Server } from "node:http";
import { isIPv4 } from "node:net";
import type { Express } from "express";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";

/** Resolves once the server accepts connections; rejects on EADDRINUSE and friends, so start() fails. */
export function listen(app: Express, host: string, port: number): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const server = createServer(app);
    const onError = (err: Error): void => reject(err);
    server.once("error", onError);
    server.once("listening", () => {
      server.off("error", onError);
      resolve(server);
    });
    server.listen({ host, port });
  });
}

/** docs/admin-api.md: the API must stay inside a trusted network; loopback is the only address that guarantees it. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (bare === "localhost" || bare === "::1") {
    return true;
  }
  const v4 = bare.startsWith("::ffff:") ? bare.slice("::ffff:".length) : bare;
  return isIPv4(v4) && v4.startsWith("127.");
}

/** Closes the listener and every open connection (in-flight requests too: their jobs stay queued). */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeAllConnections();
  });
}

/**
 * The listening line, and a warning when the API is reachable beyond this host: inside a container the published
 * port decides who reaches it (ROUTER_CONTAINER_HOST), elsewhere anything but loopback is an operator's risk.
 */
export function logListening(
  logger: Logger,
  config: Pick<RouterConfig, "host" | "port">,
  env: NodeJS.ProcessEnv,
  signerAddress: string,
): void {
  logger.info("admin API listening", { at: "admin.listen", host: config.host, port: config.port, signerAddress });
  if (env.ROUTER_CONTAINER_HOST) {
    logger.info(
      "admin API bound to ROUTER_CONTAINER_HOST inside a container: the published port decides who reaches it",
      { at: "admin.listen", host: config.host, port: config.port },
    );
  } else if (!isLoopbackHost(config.host)) {
    logger.warn(
      "ADMIN API IS BOUND TO A NON-LOOPBACK ADDRESS: it must never be reachable from the internet (docs/admin-api.md); " +
        "bind host 127.0.0.1 or keep it strictly inside a private network",
      { at: "admin.listen", host: config.host, port: config.port },
    );
  }
}

import { createServer, type Server } from "node:http";
import { isIPv4 } from "node:net";
import type { Express } from "express";

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

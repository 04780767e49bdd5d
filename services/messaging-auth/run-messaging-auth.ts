import { createLogger, type LogLevel, LOG_LEVELS } from "../../shared/logging/create-logger";
import { createAuthServer, type AuthServer } from "./app";

/**
 * The local messaging auth server's process (network `local` only; see docs/messaging.md). It needs no router
 * config, so it does not go through run-service: env only, MESSAGING_AUTH_HOST (127.0.0.1), MESSAGING_AUTH_PORT
 * (5040, the `local` default of `authUrl`), MESSAGING_AUTH_LOG_LEVEL (info). Stops on SIGINT/SIGTERM.
 */
const SHUTDOWN_TIMEOUT_MS = 5000;

function readPort(raw: string | undefined): number {
  const port = Number(raw ?? "5040");
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`messaging-auth: MESSAGING_AUTH_PORT must be a port number, got ${JSON.stringify(raw)}\n`);
    process.exit(1);
  }
  return port;
}

function readLevel(raw: string | undefined): LogLevel {
  const level = raw ?? "info";
  return level === "silent" || level in LOG_LEVELS ? (level as LogLevel) : "info";
}

export async function runMessagingAuth(): Promise<void> {
  const logger = createLogger({ level: readLevel(process.env.MESSAGING_AUTH_LOG_LEVEL), service: "messaging-auth" });
  let server: AuthServer;
  try {
    server = await createAuthServer({
      host: process.env.MESSAGING_AUTH_HOST ?? "127.0.0.1",
      port: readPort(process.env.MESSAGING_AUTH_PORT),
      logger,
    });
  } catch (err) {
    logger.fatal("messaging auth server failed to start", { at: "messaging-auth.start", error: err });
    await logger.flush();
    process.exit(1);
  }
  process.send?.("ready");
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (stopping) {
      return;
    }
    stopping = true;
    logger.info("shutting down", { at: "messaging-auth.shutdown", signal });
    const timer = setTimeout(() => process.exit(1), SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    void server
      .close()
      .then(
        () => 0,
        (err: unknown) => {
          logger.error("close failed", { at: "messaging-auth.shutdown", error: err });
          return 1;
        },
      )
      .then(async (code) => {
        await logger.flush();
        process.exit(code);
      });
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

import { PassThrough } from "node:stream";
import { createAuthServer, type AuthServer } from "../../services/messaging-auth/app";
import { createLogger, type Logger } from "../../shared/logging/create-logger";

/** The local messaging auth service (services/messaging-auth) in-process, on a free loopback port. */
export function startAuthServer(logger?: Logger): Promise<AuthServer> {
  return createAuthServer({ host: "127.0.0.1", port: 0, logger });
}

export interface LogCapture {
  readonly logger: Logger;
  lines(): Array<Record<string, unknown>>;
  /** Lines whose `at` equals `at` (and, when given, whose message includes `message`). */
  find(at: string, message?: string): Array<Record<string, unknown>>;
}

/** A debug-level JSON logger whose lines the test can read back. */
export function captureLogs(service = "test"): LogCapture {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c.toString("utf8")));
  const logger = createLogger({ level: "trace", service, stream });
  const lines = (): Array<Record<string, unknown>> =>
    chunks
      .join("")
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    logger,
    lines,
    find: (at, message) =>
      lines().filter((l) => l.at === at && (message === undefined || String(l.message).includes(message))),
  };
}

export async function waitUntil<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

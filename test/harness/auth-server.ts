import { createAuthServer, type AuthServer } from "../../services/messaging-auth/app";
import type { Logger } from "../../shared/logging/create-logger";

/** The local messaging auth service (services/messaging-auth) in-process, on a free loopback port. */
export function startAuthServer(logger?: Logger): Promise<AuthServer> {
  return createAuthServer({ host: "127.0.0.1", port: 0, logger });
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

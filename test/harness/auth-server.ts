import { createAuthServer, type AuthServer } from "../../services/messaging-auth/app";
import type { Logger } from "../../shared/logging/create-logger";

/** The local messaging auth service (services/messaging-auth) in-process, on a free loopback port. */
export function startAuthServer(logger?: Logger): Promise<AuthServer> {
  return createAuthServer({ host: "127.0.0.1", port: 0, logger });
}

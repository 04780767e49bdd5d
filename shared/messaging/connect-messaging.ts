import { DebugEvents, Events, connect, jwtAuthenticator, type NatsConnection } from "nats";
import { errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import { throttledErrorLog } from "../logging/throttled-error-log";
import { redactUrl } from "../logging/redact";
import { fetchMessagingToken, type MessagingAuthSigner } from "./auth-client";
import { MessagingConfigError, MessagingUnavailableError } from "./errors";
import { createNatsMessaging } from "./nats-messaging";
import { isChecksummedAddress } from "./subjects";
import { createTokenKeeper, type TokenKeeper } from "./token-keeper";
import type { Messaging } from "./types";

/** The original's keep-alive (ts-natsutil): a ping every 30 s, three unanswered ones mean the link is dead. */
const PING_INTERVAL_MS = 30_000;
const MAX_PINGS_OUT = 3;
export const DEFAULT_RECONNECT_WAIT_MS = 2_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

export interface ConnectMessagingParams {
  /** `config.messagingUrl`: one URL or a comma-separated cluster list (nats://host:port each). */
  readonly servers: string | readonly string[];
  /** `config.authUrl`. */
  readonly authUrl: string;
  readonly signer: MessagingAuthSigner;
  readonly logger: Logger;
  /** Client name shown by the server (`/connz`); helps tell auction instances apart. */
  readonly name?: string;
  /** Incoming bodies above this are dropped unread (DEFAULT_MAX_PAYLOAD_BYTES = 64 KiB). */
  readonly maxPayloadBytes?: number;
  /** Per auth HTTP call. */
  readonly authTimeoutMs?: number;
  /** Wait between reconnect attempts to one server (nats adds jitter). */
  readonly reconnectWaitMs?: number;
  readonly connectTimeoutMs?: number;
  readonly dropLogWindowMs?: number;
  readonly closeTimeoutMs?: number;
  /** The server does not deliver this connection's own publishes to its own subscriptions (CONNECT `echo: false`). */
  readonly noEcho?: boolean;
  /**
   * Called if the connection closes without close() (the client gave up). With endless reconnects this
   * should not happen; a service passes a callback that fails the process so PM2 restarts it.
   */
  readonly onUnexpectedClose?: (err: Error | undefined) => void;
}

/**
 * Logs in at the auth server (docs/protocol.md#login), connects to NATS with the token as the CONNECT `jwt`, and
 * returns a `Messaging`. The client reconnects forever; every disconnect triggers a fresh login whose token the
 * (synchronous) authenticator hands to the CONNECTs after it (one sent before that login completes carries the
 * previous token, refused only if it has expired, and the next attempt the fresh one). Rejects with
 * MessagingAuthError when the first
 * login fails and with MessagingUnavailableError when no server accepts the first connection.
 */
export async function connectMessaging(params: ConnectMessagingParams): Promise<Messaging> {
  const servers = splitServers(params.servers);
  const logger = params.logger;
  const address = await params.signer.getAddress();
  if (!isChecksummedAddress(address)) {
    throw new MessagingConfigError("messaging signer address must be checksummed", { address });
  }
  const tokens = createTokenKeeper({
    fetchToken: () =>
      fetchMessagingToken({ authUrl: params.authUrl, signer: params.signer, timeoutMs: params.authTimeoutMs }),
    logger,
  });
  const loggedServers = servers.map(redactUrl);
  logger.info("messaging: logging in", { at: "messaging.auth", authUrl: redactUrl(params.authUrl), address });
  await tokens.init();

  const nc = await dial(params, servers, address, tokens).catch((err: unknown) => {
    throw new MessagingUnavailableError(
      `no messaging server accepted the connection: ${errorMessage(err)}`,
      { servers: loggedServers },
      { cause: err },
    );
  });
  logger.info("messaging connected", {
    at: "messaging.connect",
    servers: loggedServers,
    server: nc.getServer(),
    address,
  });

  let connected = true;
  let closeRequested = false;
  void watchStatus(nc, tokens, logger, (value) => {
    connected = value;
  });
  void nc.closed().then((err) => {
    if (!closeRequested) {
      logger.error("messaging connection closed unexpectedly", {
        at: "messaging.closed",
        error: err ? errorMessage(err) : null,
      });
      params.onUnexpectedClose?.(err ?? undefined);
    }
  });

  const messaging = createNatsMessaging({
    nc,
    address,
    logger,
    maxPayloadBytes: params.maxPayloadBytes,
    dropLogWindowMs: params.dropLogWindowMs,
    closeTimeoutMs: params.closeTimeoutMs,
    isConnected: () => connected,
  });
  return {
    ...messaging,
    close: () => {
      closeRequested = true;
      return messaging.close();
    },
  };
}

function dial(
  params: ConnectMessagingParams,
  servers: string[],
  address: string,
  tokens: TokenKeeper,
): Promise<NatsConnection> {
  return connect({
    servers,
    name: params.name ?? `router-${address}`,
    authenticator: jwtAuthenticator(() => tokens.current()),
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: params.reconnectWaitMs ?? DEFAULT_RECONNECT_WAIT_MS,
    // A token refused twice in a row would otherwise stop reconnecting for good; ours refreshes instead.
    ignoreAuthErrorAbort: true,
    pingInterval: PING_INTERVAL_MS,
    maxPingOut: MAX_PINGS_OUT,
    timeout: params.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    noEcho: params.noEcho ?? false,
  });
}

/**
 * `config.messagingUrl` is a comma-separated list (docs/protocol.md#endpoints: the original passed it whole, as one
 * server).
 */
export function splitServers(servers: string | readonly string[]): string[] {
  const list = (typeof servers === "string" ? servers.split(",") : [...servers])
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (list.length === 0) {
    throw new MessagingConfigError("no messaging server configured");
  }
  for (const server of list) {
    if (/^wss?:\/\//i.test(server)) {
      // The node client speaks the NATS TCP protocol only; ws:// endpoints are for browsers.
      throw new MessagingConfigError("messaging server must be a nats:// URL (WebSocket endpoints are for browsers)", {
        server: redactUrl(server),
      });
    }
  }
  return list;
}

/** Status changes → logs, the connected flag, and token refreshes before the next CONNECT. */
async function watchStatus(
  nc: NatsConnection,
  tokens: TokenKeeper,
  logger: Logger,
  setConnected: (value: boolean) => void,
): Promise<void> {
  const asyncError = throttledErrorLog(logger, "messaging server reported an error", { at: "messaging.status" });
  try {
    for await (const status of nc.status()) {
      switch (status.type) {
        case Events.Disconnect:
          setConnected(false);
          tokens.invalidate();
          void tokens.ensureFresh();
          logger.warn("messaging disconnected; reconnecting", { at: "messaging.status", server: String(status.data) });
          break;
        case DebugEvents.Reconnecting:
          // Each attempt retries a login that failed; a no-op once the token is fresh.
          void tokens.ensureFresh();
          logger.debug("messaging reconnect attempt", { at: "messaging.status", server: String(status.data) });
          break;
        case Events.Reconnect:
          setConnected(true);
          logger.info("messaging reconnected", { at: "messaging.status", server: String(status.data) });
          break;
        case Events.Error:
          asyncError(status.data instanceof Error ? status.data : new Error(String(status.data)));
          break;
        case Events.LDM:
          logger.warn("messaging server entering lame duck mode", {
            at: "messaging.status",
            server: String(status.data),
          });
          break;
        case DebugEvents.StaleConnection:
          logger.warn("messaging connection stale (pings unanswered)", { at: "messaging.status" });
          break;
        default:
          logger.trace("messaging status", { at: "messaging.status", type: status.type });
      }
    }
  } catch (err) {
    logger.error("messaging status loop ended", { at: "messaging.status", error: errorMessage(err) });
  }
}

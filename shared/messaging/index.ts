import type { RouterConfig } from "../config/types";
import { splitServers } from "./connect-messaging";

export type * from "./types";
export { AUTH_MESSAGE_PREFIX, authMessage } from "./auth-message";
export {
  DEFAULT_AUTH_TIMEOUT_MS,
  fetchMessagingToken,
  type FetchMessagingTokenParams,
  type MessagingAuthSigner,
} from "./auth-client";
export { connectMessaging, splitServers, type ConnectMessagingParams } from "./connect-messaging";
export {
  DEFAULT_MAX_PAYLOAD_BYTES,
  ENVELOPE_VERSION,
  MAX_INBOX_LENGTH,
  encodeEnvelope,
  isSupportedVersion,
  parseEnvelope,
  type Envelope,
  type EncodeEnvelopeParams,
  type ParseEnvelopeOptions,
} from "./envelope";
export * from "./errors";
export { createNatsMessaging, type NatsMessagingParams } from "./nats-messaging";
export * from "./subjects";

/**
 * Where a router connects, from the loaded config (load-config already applied the per-network defaults
 * of docs/protocol.md#endpoints and the env overrides): the server list split, the auth URL as is.
 */
export function messagingEndpoints(config: Pick<RouterConfig, "messagingUrl" | "authUrl">): {
  servers: string[];
  authUrl: string;
} {
  return { servers: splitServers(config.messagingUrl), authUrl: config.authUrl };
}

import { RouterError, errorClass } from "../errors";

/** Why an incoming message was refused before any handler saw it; each reason is throttled separately in logs. */
export type EnvelopeRejectReason =
  "too_large" | "not_utf8_json" | "not_object" | "bad_version" | "bad_inbox" | "bad_error" | "bad_subject";

/**
 * A message body that is not a usable envelope (docs/protocol.md#envelope). Not retriable: the same bytes fail the same
 * way. The message text is fixed per reason (details live in `context`) so log throttling can group repeats.
 */
export class InvalidEnvelopeError extends RouterError {
  readonly code: string;
  readonly retriable = false;
  readonly reason: EnvelopeRejectReason;

  constructor(reason: EnvelopeRejectReason, message: string, context: Record<string, unknown> = {}) {
    super(message, { reason, ...context });
    this.reason = reason;
    this.code =
      reason === "too_large"
        ? "MESSAGE_TOO_LARGE"
        : reason === "bad_version"
          ? "ENVELOPE_VERSION_UNSUPPORTED"
          : "INVALID_ENVELOPE";
  }
}

/** A subject that is not `<to>.<from>.<topic>.request|response` with checksummed addresses and a known topic. */
export class InvalidSubjectError extends errorClass(RouterError, "INVALID_SUBJECT", "terminal") {}

export type AuthStep = "nonce" | "sign" | "token";

/**
 * The auth flow (docs/protocol.md#login) failed at `step` (HTTP status in context when there was one). Retriable: auth
 * servers restart and networks blip. Never carries the token: the failing step is the one that did not produce it.
 */
export class MessagingAuthError extends errorClass(RouterError, "MESSAGING_AUTH_FAILED", "retriable") {
  readonly step: AuthStep;
  readonly status: number | undefined;

  constructor(
    step: AuthStep,
    message: string,
    context: { status?: number; [key: string]: unknown } = {},
    options?: { cause?: unknown },
  ) {
    super(message, { step, ...context }, options);
    this.step = step;
    this.status = context.status;
  }
}

/** The messaging parameters cannot work (no server, a WebSocket URL the node client cannot dial, bad URL). */
export class MessagingConfigError extends errorClass(RouterError, "MESSAGING_CONFIG_INVALID", "terminal") {}

/** Publishing after close(), or the connection refused the publish (closed, payload over the server limit). */
export class MessagingPublishError extends errorClass(RouterError, "MESSAGING_PUBLISH_FAILED", "retriable") {}

/** No messaging server accepted the first connection. Retriable: servers come back; PM2 restarts the process. */
export class MessagingUnavailableError extends errorClass(RouterError, "MESSAGING_UNAVAILABLE", "retriable") {}

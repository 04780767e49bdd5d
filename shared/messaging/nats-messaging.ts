import type { Msg, NatsConnection, Subscription } from "nats";
import { asError } from "../errors";
import type { Logger } from "../logging/create-logger";
import { throttledErrorLog } from "../logging/throttled-error-log";
import { createInFlight, drainAndClose } from "./close-messaging";
import { DEFAULT_MAX_PAYLOAD_BYTES, encodeEnvelope } from "./envelope";
import { MessagingPublishError } from "./errors";
import { createDropLog, eachMessage, handlerErrorLog, requestOf, responseOf, subscribeLogged } from "./message-intake";
import { createOutbox } from "./outbox";
import { noticeSubject, requestSubject, requestWildcard, responseSubject, responseWildcard } from "./subjects";
import type {
  Messaging,
  MessagingRequest,
  MessagingTopic,
  NxtpErrorJson,
  RequestHandler,
  ResponseHandler,
  ServeOptions,
} from "./types";

/** Malformed traffic is anyone's to send: one log line per reason per window, not one per message. */
export const DEFAULT_DROP_LOG_WINDOW_MS = 30_000;
/** close() waits this long for subscriptions to drain and handlers to finish, then closes regardless. */
export const MESSAGING_CLOSE_TIMEOUT_MS = 5_000;

export interface NatsMessagingParams {
  readonly nc: NatsConnection;
  /** Checksummed address of the messaging signer (token 1 of everything published). */
  readonly address: string;
  readonly logger: Logger;
  readonly maxPayloadBytes?: number;
  readonly dropLogWindowMs?: number;
  readonly closeTimeoutMs?: number;
  /** Connection state as the status loop last saw it. */
  readonly isConnected: () => boolean;
}

/**
 * `Messaging` over an established NATS connection: subjects, envelopes and logging; the connection and
 * its auth are connect-messaging's job. Subscriptions use callbacks (no async iterator per message), and
 * the per-message path allocates only the parsed envelope and the request object handed to the handler.
 */
export function createNatsMessaging(params: NatsMessagingParams): Messaging {
  const { nc, address, logger } = params;
  const maxBytes = params.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const windowMs = params.dropLogWindowMs ?? DEFAULT_DROP_LOG_WINDOW_MS;
  const subscriptions: Subscription[] = [];
  const inFlight = createInFlight();
  let closing: Promise<void> | undefined;

  /** `topic` names the subscription in its log lines: a messaging topic, or a notice channel. */
  const subscribe = (subject: string, queue: string | undefined, topic: string, onMsg: (msg: Msg) => void): void => {
    if (closing) {
      throw new MessagingPublishError("messaging is closed", { subject });
    }
    subscriptions.push(subscribeLogged({ nc, logger, windowMs }, { subject, queue, topic }, onMsg));
  };

  // Publishing stays allowed while close() drains: handlers still in flight must be able to answer.
  const outbox = createOutbox(nc, throttledErrorLog(logger, "messaging publish failed", { at: "messaging.publish" }));
  const publish = (subject: string, body: string): void => outbox.publish(subject, body, false);

  const serve = (topic: MessagingTopic, handler: RequestHandler, options?: ServeOptions): void => {
    const handlerError = handlerErrorLog(logger, windowMs, topic, "request");
    const onMsg = eachMessage({
      parse: (msg) => requestOf(msg, topic, maxBytes),
      drop: createDropLog(logger, windowMs, topic, "request"),
      handlerError,
      handle: (request) => {
        const result = handler(request);
        // A thenable check, not instanceof: promises from another realm (vm, jest) are promises too.
        if (result !== undefined && typeof (result as Promise<void>).then === "function") {
          inFlight.track(Promise.resolve(result), handlerError);
        }
      },
    });
    subscribe(requestWildcard(topic), options?.queueGroup, topic, onMsg);
  };

  const onResponse = (topic: MessagingTopic, handler: ResponseHandler): void => {
    const onMsg = eachMessage({
      parse: (msg) => responseOf(msg, topic, maxBytes),
      drop: createDropLog(logger, windowMs, topic, "response"),
      handlerError: handlerErrorLog(logger, windowMs, topic, "response"),
      handle: handler,
    });
    subscribe(responseWildcard(address, topic), undefined, topic, onMsg);
  };

  const onNotice = (channel: string, handler: (body: string) => void): void => {
    const handlerError = throttledErrorLog(
      logger,
      "messaging notice handler failed",
      { at: "messaging.handler", channel },
      windowMs,
    );
    const onMsg = eachMessage({
      parse: (msg) => msg.string(),
      drop: (err) => handlerError(asError(err)),
      handlerError,
      handle: handler,
    });
    subscribe(noticeSubject(address, channel), undefined, channel, onMsg);
  };

  const respondWith = (request: MessagingRequest, data: unknown, error?: NxtpErrorJson): void => {
    publish(
      responseSubject(request.from, address, request.topic),
      encodeEnvelope({ responseInbox: request.responseInbox, data, error }),
    );
  };

  return {
    address,
    serve,
    respond: (request: MessagingRequest, data: unknown) => respondWith(request, data),
    respondError: (request: MessagingRequest, error: NxtpErrorJson) => respondWith(request, null, error),
    request: (topic: MessagingTopic, data: unknown, responseInbox: string) => {
      publish(requestSubject(address, topic), encodeEnvelope({ responseInbox, data }));
    },
    onResponse,
    // A notice rides in the socket write of what was published before it (the answer it settles).
    notify: (channel: string, body: string) => outbox.publish(noticeSubject(address, channel), body, true),
    onNotice,
    isConnected: () => !closing && !nc.isClosed() && params.isConnected(),
    flush: async () => {
      await outbox.flush();
      await nc.flush();
    },
    close: () => {
      closing ??= drainAndClose({
        nc,
        outbox,
        subscriptions,
        inFlight,
        logger,
        timeoutMs: params.closeTimeoutMs ?? MESSAGING_CLOSE_TIMEOUT_MS,
      });
      return closing;
    },
  };
}

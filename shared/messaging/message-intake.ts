import type { Msg, NatsConnection, NatsError, Subscription } from "nats";
import { asError } from "../errors";
import type { Logger } from "../logging/create-logger";
import { throttledErrorLog } from "../logging/throttled-error-log";
import { parseEnvelope } from "./envelope";
import { InvalidEnvelopeError, InvalidSubjectError } from "./errors";
import { parseSubject } from "./subjects";
import type { MessagingRequest, MessagingResponse, MessagingTopic } from "./types";

/** How an incoming message is subscribed, parsed, dropped when malformed, and handed over (nats-messaging.ts). */

export type ErrorLog = (err: Error) => void;
type MessageSide = "request" | "response";

/** A callback subscription whose errors (slow consumer, permissions) are logged, throttled. */
export function subscribeLogged(
  deps: { nc: NatsConnection; logger: Logger; windowMs: number },
  p: { subject: string; queue: string | undefined; topic: string },
  onMsg: (msg: Msg) => void,
): Subscription {
  const { nc, logger } = deps;
  const { subject, queue, topic } = p;
  const subError = throttledErrorLog(
    logger,
    "messaging subscription error",
    { at: "messaging.subscription", topic, subject },
    deps.windowMs,
  );
  const callback = (err: NatsError | null, msg: Msg): void => {
    if (err) {
      subError(err);
      return;
    }
    onMsg(msg);
  };
  const sub = queue === undefined ? nc.subscribe(subject, { callback }) : nc.subscribe(subject, { queue, callback });
  logger.info("messaging subscribed", { at: "messaging.subscribe", subject, queueGroup: queue ?? null });
  return sub;
}

/** Each message: parsed (a malformed one is dropped, logged), then handed to the handler (a throw is logged). */
export function eachMessage<T>(p: {
  parse: (msg: Msg) => T;
  drop: (err: unknown) => void;
  handle: (value: T) => void;
  handlerError: ErrorLog;
}): (msg: Msg) => void {
  return (msg) => {
    let value: T;
    try {
      value = p.parse(msg);
    } catch (err) {
      p.drop(err);
      return;
    }
    try {
      p.handle(value);
    } catch (err) {
      p.handlerError(asError(err));
    }
  };
}

/** A request as the handler gets it; throws InvalidEnvelopeError or InvalidSubjectError for a malformed one. */
export function requestOf(msg: Msg, topic: MessagingTopic, maxBytes: number): MessagingRequest {
  const receivedAtMs = Date.now();
  const envelope = parseEnvelope(msg.data, { maxBytes, requireInbox: true });
  const { from } = parseSubject(msg.subject);
  return {
    subject: msg.subject,
    from,
    topic,
    responseInbox: envelope.responseInbox as string,
    data: envelope.data,
    receivedAtMs,
    sizeBytes: msg.data.byteLength,
    raw: msg.data,
  };
}

/** A response as the handler gets it; throws like requestOf. */
export function responseOf(msg: Msg, topic: MessagingTopic, maxBytes: number): MessagingResponse {
  const receivedAtMs = Date.now();
  const envelope = parseEnvelope(msg.data, { maxBytes, requireInbox: false });
  const { from } = parseSubject(msg.subject);
  return {
    subject: msg.subject,
    responder: from,
    topic,
    responseInbox: envelope.responseInbox,
    data: envelope.data,
    error: envelope.error,
    receivedAtMs,
  };
}

/** Malformed traffic on one topic and side: one throttled log line per reason, not one per message. */
export function createDropLog(
  logger: Logger,
  windowMs: number,
  topic: MessagingTopic,
  side: MessageSide,
): (err: unknown) => void {
  const byReason = new Map<string, ErrorLog>();
  return (err) => {
    const reason =
      err instanceof InvalidEnvelopeError
        ? err.reason
        : err instanceof InvalidSubjectError
          ? "bad_subject"
          : "unexpected";
    let log = byReason.get(reason);
    if (!log) {
      log = throttledErrorLog(
        logger,
        "messaging: dropped a malformed message",
        { at: "messaging.drop", topic, side, reason },
        windowMs,
      );
      byReason.set(reason, log);
    }
    log(asError(err));
  };
}

/** A handler that throws or rejects: one throttled log line per window, per topic and side. */
export function handlerErrorLog(logger: Logger, windowMs: number, topic: MessagingTopic, side: MessageSide): ErrorLog {
  return throttledErrorLog(logger, `messaging ${side} handler failed`, { at: "messaging.handler", topic }, windowMs);
}

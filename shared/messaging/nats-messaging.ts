import type { Msg, NatsConnection, NatsError, Subscription } from "nats";
import { errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import { throttledErrorLog } from "../logging/throttled-error-log";
import { DEFAULT_MAX_PAYLOAD_BYTES, encodeEnvelope, parseEnvelope } from "./envelope";
import { InvalidEnvelopeError, InvalidSubjectError, MessagingPublishError } from "./errors";
import {
  noticeSubject,
  parseSubject,
  requestSubject,
  requestWildcard,
  responseSubject,
  responseWildcard,
} from "./subjects";
import type {
  Messaging,
  MessagingRequest,
  MessagingResponse,
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

type ErrorLog = (err: Error) => void;
type MessageSide = "request" | "response";

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

/**
 * nats.js writes its buffer to the socket on a microtask after the first publish into it, so answers finished in
 * one event-loop turn (the bids whose reservations came back in one Redis read) still went out one write each,
 * interleaved with their continuations. Socket writes were the largest entry of the auction's profile.
 */
const OUTBOX_CHUNK_BYTES = 24 * 1024;

/**
 * The publishes of one event-loop turn, handed to nats.js together at its end (setImmediate): one socket write
 * for all of them. Order is kept. nats.js also writes at once, inline, when its buffer reaches 32 KiB (after the
 * message that crossed it), so a turn's publishes are handed over in chunks of at most OUTBOX_CHUNK_BYTES, each
 * written before the next is handed over; a publish marked `ridesOnPrevious` (a settled notice) never starts a
 * chunk, so it stays in the socket write of the answer before it (docs/auction.md, "Instances and failures"). Only
 * a single message over the limit is written alone, its notice in the next write.
 */
interface Outbox {
  /** Throws MessagingPublishError once the connection is closed; a failure at hand-over is logged. */
  publish(subject: string, body: string, ridesOnPrevious: boolean): void;
  /** Hands everything queued to nats.js (before a flush's PING, before a drain); resolves once all is handed over. */
  flush(): Promise<void>;
}

interface Queued {
  readonly subject: string;
  readonly body: string;
  readonly ridesOnPrevious: boolean;
}

function createOutbox(nc: NatsConnection, logError: ErrorLog): Outbox {
  let queued: Queued[] = [];
  let scheduled = false;
  let chain: Promise<void> | undefined;

  /** The head of the queue, up to OUTBOX_CHUNK_BYTES (at least one publish and the notices riding on it). */
  const handOverChunk = (): void => {
    let bytes = 0;
    let end = 0;
    for (; end < queued.length; end += 1) {
      const item = queued[end];
      const size = item.subject.length + item.body.length + 32; // the PUB line and CRLFs
      if (end > 0 && !item.ridesOnPrevious && bytes + size > OUTBOX_CHUNK_BYTES) break;
      bytes += size;
    }
    const chunk = end === queued.length ? queued : queued.slice(0, end);
    queued = end === queued.length ? [] : queued.slice(end);
    for (const { subject, body } of chunk) {
      try {
        nc.publish(subject, body);
      } catch (err) {
        logError(asError(err));
      }
    }
  };

  // Each further chunk on a microtask: it runs after the one nats.js queued to write the chunk before.
  const handOverRest = async (): Promise<void> => {
    try {
      while (queued.length > 0) {
        await Promise.resolve();
        handOverChunk();
      }
    } finally {
      chain = undefined;
    }
  };

  const flush = (): Promise<void> => {
    scheduled = false;
    if (chain !== undefined) return chain; // it takes whatever is queued meanwhile too
    handOverChunk();
    if (queued.length === 0) return Promise.resolve();
    chain = handOverRest();
    return chain;
  };

  return {
    publish: (subject, body, ridesOnPrevious) => {
      if (nc.isClosed()) {
        throw new MessagingPublishError("messaging publish failed: the connection is closed", { subject });
      }
      queued.push({ subject, body, ridesOnPrevious });
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => void flush());
      }
    },
    flush,
  };
}

/** A callback subscription whose errors (slow consumer, permissions) are logged, throttled. */
function subscribeLogged(
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
function eachMessage<T>(p: {
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
function requestOf(msg: Msg, topic: MessagingTopic, maxBytes: number): MessagingRequest {
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
function responseOf(msg: Msg, topic: MessagingTopic, maxBytes: number): MessagingResponse {
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
function createDropLog(
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
function handlerErrorLog(logger: Logger, windowMs: number, topic: MessagingTopic, side: MessageSide): ErrorLog {
  return throttledErrorLog(logger, `messaging ${side} handler failed`, { at: "messaging.handler", topic }, windowMs);
}

/** The request handlers still running: close() waits for them, because they may still answer. */
interface InFlight {
  track(pending: Promise<void>, onError: ErrorLog): void;
  settled(): Promise<unknown>;
  readonly size: number;
}

function createInFlight(): InFlight {
  const pendings = new Set<Promise<void>>();
  return {
    track: (pending, onError) => {
      const settled = pending.then(
        () => {
          pendings.delete(settled);
        },
        (err: unknown) => {
          pendings.delete(settled);
          onError(asError(err));
        },
      );
      pendings.add(settled);
    },
    settled: () => Promise.allSettled([...pendings]),
    get size() {
      return pendings.size;
    },
  };
}

/** Drains the subscriptions, waits for the handlers, drains the connection; closes it anyway after `timeoutMs`. */
async function drainAndClose(p: {
  nc: NatsConnection;
  outbox: Outbox;
  subscriptions: readonly Subscription[];
  inFlight: InFlight;
  logger: Logger;
  timeoutMs: number;
}): Promise<void> {
  const { nc, inFlight, logger } = p;
  const drained = (async () => {
    await Promise.allSettled(p.subscriptions.map((sub) => sub.drain()));
    // Handlers still running may answer: the connection stays open until they are done.
    await inFlight.settled();
    await p.outbox.flush(); // their answers, before nats.js stops taking publishes
    await nc.drain();
  })();
  const outcome = await raceTimeout(drained, p.timeoutMs);
  if (outcome !== "done") {
    logger.warn("messaging drain did not finish; closing the connection", {
      at: "messaging.close",
      outcome,
      inFlight: inFlight.size,
    });
  }
  if (!nc.isClosed()) {
    await p.outbox.flush();
    await nc.close();
  }
  logger.info("messaging closed", { at: "messaging.close" });
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(errorMessage(err));
}

/** "done", "failed" (the drain threw, e.g. the connection was already closed) or "timeout". */
async function raceTimeout(work: Promise<void>, timeoutMs: number): Promise<"done" | "failed" | "timeout"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  const finished = work.then(
    () => "done" as const,
    () => "failed" as const,
  );
  try {
    return await Promise.race([finished, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

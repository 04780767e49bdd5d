import type { Msg, NatsConnection, NatsError, Subscription } from "nats";
import { errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import { throttledErrorLog } from "../logging/throttled-error-log";
import { DEFAULT_MAX_PAYLOAD_BYTES, encodeEnvelope, parseEnvelope } from "./envelope";
import { InvalidEnvelopeError, InvalidSubjectError, MessagingPublishError } from "./errors";
import { parseSubject, requestSubject, requestWildcard, responseSubject, responseWildcard } from "./subjects";
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
export const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;

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
  const inFlight = new Set<Promise<void>>();
  let closing: Promise<void> | undefined;

  const dropLog = (topic: MessagingTopic, side: "request" | "response"): ((err: unknown) => void) => {
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
  };

  const subscribe = (
    subject: string,
    queue: string | undefined,
    onMsg: (msg: Msg) => void,
    topic: MessagingTopic,
  ): void => {
    if (closing) {
      throw new MessagingPublishError("messaging is closed", { subject });
    }
    const subError = throttledErrorLog(
      logger,
      "messaging subscription error",
      { at: "messaging.subscription", topic, subject },
      windowMs,
    );
    const callback = (err: NatsError | null, msg: Msg): void => {
      if (err) {
        subError(err);
        return;
      }
      onMsg(msg);
    };
    subscriptions.push(
      queue === undefined ? nc.subscribe(subject, { callback }) : nc.subscribe(subject, { queue, callback }),
    );
    logger.info("messaging subscribed", { at: "messaging.subscribe", subject, queueGroup: queue ?? null });
  };

  // Publishing stays allowed while close() drains: handlers still in flight must be able to answer.
  // Once the connection is closed, nats throws and the error below says so.
  const publish = (subject: string, body: string): void => {
    try {
      nc.publish(subject, body);
    } catch (err) {
      throw new MessagingPublishError(`messaging publish failed: ${errorMessage(err)}`, { subject }, { cause: err });
    }
  };

  const track = (pending: Promise<void>, onError: ErrorLog): void => {
    const settled = pending.then(
      () => {
        inFlight.delete(settled);
      },
      (err: unknown) => {
        inFlight.delete(settled);
        onError(asError(err));
      },
    );
    inFlight.add(settled);
  };

  const serve = (topic: MessagingTopic, handler: RequestHandler, options?: ServeOptions): void => {
    const drop = dropLog(topic, "request");
    const handlerError = throttledErrorLog(
      logger,
      "messaging request handler failed",
      { at: "messaging.handler", topic },
      windowMs,
    );
    subscribe(
      requestWildcard(topic),
      options?.queueGroup,
      (msg) => {
        const receivedAtMs = Date.now();
        let request: MessagingRequest;
        try {
          const sizeBytes = msg.data.byteLength;
          const envelope = parseEnvelope(msg.data, { maxBytes, requireInbox: true });
          const { from } = parseSubject(msg.subject);
          request = {
            subject: msg.subject,
            from,
            topic,
            responseInbox: envelope.responseInbox as string,
            data: envelope.data,
            receivedAtMs,
            sizeBytes,
            raw: msg.data,
          };
        } catch (err) {
          drop(err);
          return;
        }
        try {
          const result = handler(request);
          // A thenable check, not instanceof: promises from another realm (vm, jest) are promises too.
          if (result !== undefined && typeof (result as Promise<void>).then === "function") {
            track(Promise.resolve(result), handlerError);
          }
        } catch (err) {
          handlerError(asError(err));
        }
      },
      topic,
    );
  };

  const onResponse = (topic: MessagingTopic, handler: ResponseHandler): void => {
    const drop = dropLog(topic, "response");
    const handlerError = throttledErrorLog(
      logger,
      "messaging response handler failed",
      { at: "messaging.handler", topic },
      windowMs,
    );
    subscribe(
      responseWildcard(address, topic),
      undefined,
      (msg) => {
        const receivedAtMs = Date.now();
        let response: MessagingResponse;
        try {
          const envelope = parseEnvelope(msg.data, { maxBytes, requireInbox: false });
          const { from } = parseSubject(msg.subject);
          response = {
            subject: msg.subject,
            responder: from,
            topic,
            responseInbox: envelope.responseInbox,
            data: envelope.data,
            error: envelope.error,
            receivedAtMs,
          };
        } catch (err) {
          drop(err);
          return;
        }
        try {
          handler(response);
        } catch (err) {
          handlerError(asError(err));
        }
      },
      topic,
    );
  };

  const drainAndClose = async (): Promise<void> => {
    const drained = (async () => {
      await Promise.allSettled(subscriptions.map((sub) => sub.drain()));
      // Handlers still running may answer: the connection stays open until they are done.
      await Promise.allSettled([...inFlight]);
      await nc.drain();
    })();
    const outcome = await raceTimeout(drained, params.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
    if (outcome !== "done") {
      logger.warn("messaging drain did not finish; closing the connection", {
        at: "messaging.close",
        outcome,
        inFlight: inFlight.size,
      });
    }
    if (!nc.isClosed()) {
      await nc.close();
    }
    logger.info("messaging closed", { at: "messaging.close" });
  };

  return {
    address,
    serve,
    respond: (request: MessagingRequest, data: unknown) => {
      publish(
        responseSubject(request.from, address, request.topic),
        encodeEnvelope({ responseInbox: request.responseInbox, data }),
      );
    },
    respondError: (request: MessagingRequest, error: NxtpErrorJson) => {
      publish(
        responseSubject(request.from, address, request.topic),
        encodeEnvelope({ responseInbox: request.responseInbox, data: null, error }),
      );
    },
    request: (topic: MessagingTopic, data: unknown, responseInbox: string) => {
      publish(requestSubject(address, topic), encodeEnvelope({ responseInbox, data }));
    },
    onResponse,
    isConnected: () => !closing && !nc.isClosed() && params.isConnected(),
    flush: () => nc.flush(),
    close: () => {
      closing ??= drainAndClose();
      return closing;
    },
  };
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

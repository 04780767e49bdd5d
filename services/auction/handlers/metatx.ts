import { randomUUID } from "node:crypto";
import { RouterError, errorCode, errorMessage } from "../../../shared/errors";
import { keyedThrottledLog } from "../../../shared/logging/throttled-error-log";
import type { MessagingRequest, NxtpErrorJson, RequestHandler } from "../../../shared/messaging/types";
import { routerMetrics } from "../../../shared/metrics/router-metrics";
import { validateMetaTxRequest, type FulfillMetaTx } from "../../../shared/protocol/metatx-request";
import type { AuctionContext } from "../context";
import { InvalidMetaTxPayloadError, InvalidMetaTxTypeError, RelayBusyError } from "../operations/relay-errors";
import { relayFulfill, type RelayOptions, type RelayTrace } from "../operations/relay-fulfill";

/**
 * `*.*.metatx.request` (docs/protocol.md#relaying, docs/relaying.md): a request without data is dropped; anything else
 * is answered, with `{transactionHash, chainId}` once the relay is broadcast, or with an error reply
 * (`{type: <error class>, message, context}`) for a refusal or a failure. The original answered failures
 * with silence, leaving the requester to time out. Every request is counted in `router_metatx_requests_total`
 * (outcome, code); a relayed one is logged, while the lines of the other outcomes, which any requester can
 * cause, are throttled per outcome and code (one per minute, with `suppressedRepeats`). Nothing a request
 * contains can make this throw.
 */
export function createMetaTxHandler(
  ctx: AuctionContext,
  options: Omit<RelayOptions, "requestId" | "trace"> = {},
): RequestHandler {
  const logger = ctx.logger.child({ handler: "metatx" });
  const throttled = keyedThrottledLog(logger);
  const metrics = routerMetrics();
  return async (request) => {
    const startedAtMs = Date.now();
    if (request.data === null || request.data === undefined) {
      metrics.metatxRequests.inc({ outcome: "dropped", reason: "NO_DATA" });
      throttled("debug", "dropped", "metatx request without data dropped", {
        at: "auction.metatx",
        from: request.from,
        outcome: "dropped",
      });
      return;
    }
    const requestId = randomUUID();
    const base = { at: "auction.metatx", requestId, from: request.from };
    let fulfill: FulfillMetaTx | undefined;
    const trace: RelayTrace = { attempts: 0 };
    try {
      fulfill = validated(request.data);
      const outcome = await relayFulfill(ctx, fulfill, { ...options, requestId, trace });
      reply(request, () =>
        ctx.messaging.respond(request, { transactionHash: outcome.transactionHash, chainId: outcome.chainId }),
      );
      metrics.metatxRequests.inc({ outcome: "relayed", reason: outcome.existing ? "EXISTING" : "NEW" });
      logger.info("metatx relayed", {
        ...base,
        ...ids(fulfill),
        outcome: "relayed",
        jobId: outcome.jobId,
        existing: outcome.existing,
        ...traced(trace),
        transactionHash: outcome.transactionHash,
        relayerFee: fulfill.relayerFee,
        expectedFee: outcome.expectedFee,
        durationMs: Date.now() - startedAtMs,
      });
    } catch (err) {
      reply(request, () => ctx.messaging.respondError(request, toNxtpErrorJson(err)));
      const refusal = err instanceof RouterError && !OPERATIONAL_FAILURES.has(err.code);
      const outcome = refusal ? "refused" : "failed";
      const code = err instanceof RouterError ? err.code : "INTERNAL";
      metrics.metatxRequests.inc({ outcome, reason: code });
      throttled(
        refusal ? "info" : err instanceof RouterError ? "warn" : "error",
        `${outcome}:${code}`,
        "metatx not relayed",
        {
          ...base,
          ...(fulfill ? ids(fulfill) : transactionIdOf(err)),
          outcome,
          ...traced(trace),
          code: errorCode(err),
          error: errorMessage(err),
          durationMs: Date.now() - startedAtMs,
        },
      );
    }
  };

  /** A reply that cannot be published (connection closing) is logged; the request is over either way. */
  function reply(request: MessagingRequest, publish: () => void): void {
    try {
      publish();
    } catch (err) {
      logger.warn("metatx reply not published", { at: "auction.metatx", from: request.from, error: errorMessage(err) });
    }
  }
}

/**
 * The answer to a request beyond the in-flight bound (bounded-handler.ts): RelayBusyError at once, counted, and
 * logged at most once a minute.
 */
export function createMetaTxShed(ctx: AuctionContext, maxInFlight: number): (request: MessagingRequest) => void {
  const logger = ctx.logger.child({ handler: "metatx" });
  const throttled = keyedThrottledLog(logger);
  const metrics = routerMetrics();
  return (request) => {
    metrics.requestsShed.inc({ topic: "metatx" });
    metrics.metatxRequests.inc({ outcome: "busy", reason: "RELAY_BUSY" });
    const busy = new RelayBusyError(`this router is handling ${maxInFlight} relay requests already; ask again`, {});
    try {
      ctx.messaging.respondError(request, toNxtpErrorJson(busy));
    } catch {
      // The connection is closing: the request is over either way.
    }
    throttled("warn", "busy", "metatx request shed: too many in flight", {
      at: "auction.metatx",
      from: request.from,
      outcome: "busy",
      code: busy.code,
      maxInFlight,
    });
  };
}

/**
 * Failures of the router's own machinery (worth an operator's look); every other refusal is ordinary traffic:
 * every router receives every request, including those for transfers other routers carry.
 */
const OPERATIONAL_FAILURES: ReadonlySet<string> = new Set([
  "RECEIVER_PREPARE_NOT_VISIBLE",
  "RELAY_CHAIN_UNAVAILABLE",
  "RELAY_FAILED",
  "RELAY_BROADCAST_TIMEOUT",
  "RELAY_QUEUE_UNAVAILABLE",
  "RELAYER_FEE_UNAVAILABLE",
]);

function validated(data: unknown): FulfillMetaTx {
  const validation = validateMetaTxRequest(data);
  if (validation.ok) {
    return validation.request;
  }
  const context = validation.transactionId === undefined ? {} : { transactionId: validation.transactionId };
  throw validation.reason === "invalid-type"
    ? new InvalidMetaTxTypeError(validation.message, context)
    : new InvalidMetaTxPayloadError(validation.message, context);
}

/** How many times the checks ran (retried refusals) and where the receiving side was proven (store or chain). */
function traced(trace: RelayTrace): Record<string, unknown> {
  return trace.attempts === 0
    ? {}
    : {
        attempts: trace.attempts,
        transferSource: trace.source,
        ...(trace.retriedFailedJob ? { retriedFailedJob: true } : {}),
      };
}

function ids(fulfill: FulfillMetaTx): Record<string, unknown> {
  return { transactionId: fulfill.txData.transactionId, user: fulfill.txData.user, chainId: fulfill.chainId };
}

function transactionIdOf(err: unknown): Record<string, unknown> {
  return err instanceof RouterError && typeof err.context.transactionId === "string"
    ? { transactionId: err.context.transactionId }
    : {};
}

/** NxtpErrorJson with `type` = our class name; an unexpected error says nothing about its internals. */
export function toNxtpErrorJson(err: unknown): NxtpErrorJson {
  if (err instanceof RouterError) {
    return {
      type: err.name,
      message: err.message,
      context: { ...err.context, code: err.code, retriable: err.retriable },
    };
  }
  return { type: "RelayInternalError", message: "internal error (details are in the router's log)", context: {} };
}

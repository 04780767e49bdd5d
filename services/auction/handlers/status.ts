import { errorMessage } from "../../../shared/errors";
import { keyedThrottledLog } from "../../../shared/logging/throttled-error-log";
import type { MessagingRequest, RequestHandler } from "../../../shared/messaging/types";
import { routerMetrics } from "../../../shared/metrics/router-metrics";
import type { AuctionContext } from "../context";
import { buildStatusReport, readRouterVersion } from "../operations/status-report";

/**
 * `*.*.status.request` (docs/protocol.md#status): every request is answered, whatever its data (the SDK sends
 * `{requestee}`), also in cleanUpMode and diagnosticMode (the original went silent in cleanUpMode).
 */
export function createStatusHandler(ctx: AuctionContext, routerVersion: string = readRouterVersion()): RequestHandler {
  const logger = ctx.logger.child({ handler: "status" });
  return async (request) => {
    const report = await buildStatusReport(ctx, routerVersion);
    try {
      ctx.messaging.respond(request, report);
    } catch (err) {
      logger.warn("status reply not published", { at: "auction.status", from: request.from, error: errorMessage(err) });
      return;
    }
    logger.debug("status answered", { at: "auction.status", from: request.from });
  };
}

/**
 * A status request beyond the in-flight bound (bounded-handler.ts) is not answered: counted, and logged at most once
 * a minute. A requester that floods status requests gets no more Redis work from this process than the bound allows.
 */
export function createStatusShed(ctx: AuctionContext, maxInFlight: number): (request: MessagingRequest) => void {
  const throttled = keyedThrottledLog(ctx.logger.child({ handler: "status" }));
  const metrics = routerMetrics();
  return (request) => {
    metrics.requestsShed.inc({ topic: "status" });
    throttled("warn", "busy", "status request shed: too many in flight", {
      at: "auction.status",
      from: request.from,
      maxInFlight,
    });
  };
}

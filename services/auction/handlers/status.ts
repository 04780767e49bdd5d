import { errorMessage } from "../../../shared/errors";
import type { RequestHandler } from "../../../shared/messaging/types";
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

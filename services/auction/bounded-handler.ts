import type { MessagingRequest, RequestHandler } from "../../shared/messaging/types";

/**
 * At most `maxInFlight` requests of a topic handled at once by this process; a request beyond the bound goes to
 * `shed` (a cheap answer or nothing) instead of the handler, so a requester's flood costs the router a bounded
 * amount of Redis, RPC and memory, whatever its rate. Nothing is queued: a queue would only grow under a flood.
 */
export function boundedHandler(
  maxInFlight: number,
  handler: RequestHandler,
  shed: (request: MessagingRequest) => void,
): RequestHandler {
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) {
    throw new RangeError(`maxInFlight must be a positive integer, got ${maxInFlight}`);
  }
  let inFlight = 0;
  return async (request) => {
    if (inFlight >= maxInFlight) {
      shed(request);
      return;
    }
    inFlight += 1;
    try {
      await handler(request);
    } finally {
      inFlight -= 1;
    }
  };
}

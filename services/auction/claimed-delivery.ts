import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import type { MessagingRequest, MessagingTopic } from "../../shared/messaging/types";
import { CLAIM_LEASE_MS } from "./request-claims";
import { createDeliveryState, SETTLED_CHANNEL, TICK_MS } from "./delivery/delivery-state";
import { createOwnRequest } from "./delivery/own-request";
import { createRenewLeases } from "./delivery/renew-leases";
import { createRequestIds } from "./delivery/request-ids";
import { createCheckWatches } from "./delivery/take-over";
import type { ClaimedDelivery, ClaimedDeliveryParams } from "./delivery/types";
import { onSettledNotice, watchRequest } from "./delivery/watch-requests";

/**
 * Serves `topic` twice: in the queue group, so NATS hands each request to one instance, which answers it under a
 * claim in Redis (request-claims.ts: created by its reservation step, or before a wait); and without it, so every
 * instance watches every request. Once a request's owner has let its lease run out (it died, or stalls), or nobody
 * claimed it at all (the instance NATS picked died with the request unread), one watcher takes it over and answers.
 *
 * A settled request is announced on NATS (`SETTLED_CHANNEL`), not marked in Redis: the notice follows the answer on
 * the owner's connection, in the same socket write, so a watcher that has the notice knows the server had the answer
 * before it, and a watcher without it (after a flush of its own connection) knows the server never got it. A mark
 * in Redis is a second server: whichever write goes first, a death between the two either repeats the bid or
 * loses it. On the normal path the owner's only claim round trip is its reservation step; the watchers' checks
 * (only of requests whose notice is late) and the owners' renewals are batched per tick.
 *
 * 1. owner: the queue group's copy, answered under a claim (delivery/own-request.ts);
 * 2. watcher: every copy, watched until its settled notice (delivery/watch-requests.ts);
 * 3. each tick: the owned leases renewed (delivery/renew-leases.ts), the due watches checked and taken over
 *    (delivery/take-over.ts).
 */
export function serveClaimed(topic: MessagingTopic, p: ClaimedDeliveryParams): ClaimedDelivery {
  const state = createDeliveryState(p.leaseMs ?? CLAIM_LEASE_MS);
  const logRedisError = throttledErrorLog(p.logger, "auction claims: redis failed", { at: "auction.claim" });
  const logNoticeError = throttledErrorLog(p.logger, "auction claims: settled notice not published", {
    at: "auction.claim",
  });
  const requestIdOf = createRequestIds();
  // Step 1.
  const own = createOwnRequest(p, state, logRedisError, logNoticeError);
  const onRequest = (request: MessagingRequest): Promise<void> => {
    const requestId = requestIdOf(request);
    // The watch delivery usually comes right after this one (same read); if it came first, own() drops the watch.
    if (!state.watched.has(requestId) && !state.settledUnseen.has(requestId)) {
      state.ownWatchDue.set(requestId, Date.now());
    }
    return own(request, requestId, state.nextToken());
  };
  // Step 3.
  const renewLeases = createRenewLeases(p.claims, state, logRedisError);
  const checkWatches = createCheckWatches(p, state, own, logRedisError);
  const timer = setInterval(() => {
    if (state.stopped) return;
    const nowMs = Date.now();
    void renewLeases(nowMs);
    void checkWatches(nowMs);
  }, TICK_MS);
  timer.unref();
  // Step 2. Notices first: a watched request's notice is then never missed (it comes after the request).
  p.messaging.onNotice(SETTLED_CHANNEL, (notice) => onSettledNotice(state, notice));
  p.messaging.serve(topic, onRequest, { queueGroup: p.queueGroup });
  p.messaging.serve(topic, (request) => watchRequest(state, request, requestIdOf(request)));
  return {
    instance: state.instance,
    stop: async () => {
      state.stopped = true;
      clearInterval(timer);
      await Promise.allSettled([...state.takeovers]);
    },
  };
}

import type { MessagingRequest } from "../../../shared/messaging/types";
import { TICK_MS, type DeliveryState } from "./delivery-state";

/**
 * Every instance's copy of every request (the subscription without the queue group): watched until its settled
 * notice comes, and checked (take-over.ts) once its owner's lease would have run out. Not watched: a request owned
 * here, already watched, or whose notice came first.
 */
export function watchRequest(state: DeliveryState, request: MessagingRequest, requestId: string): void {
  if (state.ownWatchDue.delete(requestId)) return;
  if (
    state.stopped ||
    state.ownedIds.has(requestId) ||
    state.watched.has(requestId) ||
    state.settledUnseen.delete(requestId)
  ) {
    return;
  }
  state.watched.set(requestId, { request, requestId, dueMs: request.receivedAtMs + state.leaseMs + TICK_MS / 2 });
}

/** A settled notice (`<instance> <requestId>`): ends the request's watch, or is kept until its request comes. */
export function onSettledNotice(state: DeliveryState, notice: string): void {
  const space = notice.indexOf(" ");
  const requestId = notice.slice(space + 1);
  // Its own notices only end its own watch, if any (it cannot have missed its own request).
  if (state.watched.delete(requestId) || notice.slice(0, space) === state.instance || state.ownedIds.has(requestId)) {
    return;
  }
  state.settledUnseen.set(requestId, Date.now());
}

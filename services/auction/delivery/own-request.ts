import { errorMessage } from "../../../shared/errors";
import type { MessagingRequest } from "../../../shared/messaging/types";
import type { ReservedBid } from "../request-claims";
import { SETTLED_CHANNEL, type DeliveryState } from "./delivery-state";
import type { ClaimedDeliveryParams, RequestClaim } from "./types";

export type OwnRequest = (
  request: MessagingRequest,
  requestId: string,
  token: string,
  resend?: ReservedBid,
) => Promise<void>;

/**
 * Answers a request under a claim with this token: the one NATS handed to this instance, or one taken over
 * (`resend`: the bid its dead owner reserved). Announces it settled on SETTLED_CHANNEL once, right behind the answer
 * (RequestClaim.published) or when a refusal stands; a lost claim is not announced (the taker answers).
 */
export function createOwnRequest(
  p: ClaimedDeliveryParams,
  state: DeliveryState,
  logRedisError: (err: Error) => void,
  logNoticeError: (err: Error) => void,
): OwnRequest {
  return async (request, requestId, token, resend) => {
    state.owned.set(token, { requestId, token, renewAtMs: Date.now() + state.renewEveryMs });
    state.ownedIds.set(requestId, (state.ownedIds.get(requestId) ?? 0) + 1);
    state.watched.delete(requestId);
    let announced = false;
    const announce = (): void => {
      if (announced) return;
      announced = true;
      try {
        p.messaging.notify(SETTLED_CHANNEL, `${state.instance} ${requestId}`);
      } catch (err) {
        logNoticeError(err instanceof Error ? err : new Error(errorMessage(err)));
      }
    };
    const claim: RequestClaim = {
      key: p.claims.key(requestId),
      token,
      reservedLeaseMs: p.claims.reservedLeaseMs,
      keepMs: p.claims.keepMs,
      hold: () => p.claims.claim(requestId, token),
      ...(resend ? { resend } : {}),
      published: announce,
    };
    try {
      if (await p.handler(request, claim)) announce();
    } catch (err) {
      logRedisError(err instanceof Error ? err : new Error(errorMessage(err)));
    } finally {
      state.owned.delete(token);
      const left = (state.ownedIds.get(requestId) ?? 1) - 1;
      if (left > 0) state.ownedIds.set(requestId, left);
      else state.ownedIds.delete(requestId);
    }
  };
}

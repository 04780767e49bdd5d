import type { RequestClaims } from "../request-claims";
import type { DeliveryState } from "./delivery-state";

/**
 * One tick's renewals of the leases this instance owns that are due, in one round trip. A lost lease needs no
 * action here: the owner's reservation step is fenced on its token.
 */
export function createRenewLeases(
  claims: RequestClaims,
  state: DeliveryState,
  logRedisError: (err: Error) => void,
): (nowMs: number) => Promise<void> {
  let renewing = false;
  return async (nowMs) => {
    const due = [...state.owned.values()].filter((o) => o.renewAtMs <= nowMs);
    if (renewing || due.length === 0) return;
    renewing = true;
    for (const o of due) o.renewAtMs = nowMs + state.renewEveryMs;
    await claims
      .renew(due)
      .catch(logRedisError)
      .finally(() => {
        renewing = false;
      });
  };
}

import { errorMessage } from "../../../shared/errors";
import { auctionLogFields } from "../../../shared/protocol/auction-payload";
import type { ClaimCheck } from "../request-claims";
import { WATCH_MAX_AGE_MS, type DeliveryState, type Watch } from "./delivery-state";
import type { OwnRequest } from "./own-request";
import type { ClaimedDeliveryParams } from "./types";

/** A check waits this long for the NATS round trip that brings in the notices before it; else it waits a tick. */
const NOTICE_FLUSH_TIMEOUT_MS = 1_000;

/**
 * One tick's checks of the watched requests that are due:
 * 1. forget notices, own-watch marks and watches older than WATCH_MAX_AGE_MS (no requester waits so long);
 * 2. flush this instance's NATS connection, so every notice sent before now is in (a watch still here after it
 *    has no answer on the server);
 * 3. check the due claims in one round trip, each with a fresh token that takes it when its owner is gone;
 * 4. per claim: held → watch again; settled → drop; taken → answer it here (own), re-sending a reserved bid.
 */
export function createCheckWatches(
  p: ClaimedDeliveryParams,
  state: DeliveryState,
  own: OwnRequest,
  logRedisError: (err: Error) => void,
): (nowMs: number) => Promise<void> {
  let checking = false;
  return async (nowMs) => {
    // Step 1.
    if (!forgetOld(state, nowMs) || checking) return;
    checking = true;
    try {
      // Step 2.
      if (!(await noticesIn(p))) return; // NATS is away: nobody could answer now anyway; the next tick tries again
      const due = [...state.watched.values()].filter((w) => w.dueMs <= nowMs);
      if (due.length === 0) return;
      for (const w of due) state.watched.delete(w.requestId);
      // Step 3.
      const tokens = due.map(() => state.nextToken());
      let results;
      try {
        results = await p.claims.check(due.map((w, i) => ({ requestId: w.requestId, token: tokens[i] })));
      } catch (err) {
        logRedisError(err instanceof Error ? err : new Error(errorMessage(err)));
        for (const w of due) if (!state.settledUnseen.delete(w.requestId)) state.watched.set(w.requestId, w);
        return;
      }
      // Step 4.
      results.forEach((result, i) => settle(p, state, own, due[i], tokens[i], result, nowMs));
    } finally {
      checking = false;
    }
  };
}

/** Step 1; true when a watch is due. */
function forgetOld(state: DeliveryState, nowMs: number): boolean {
  for (const seen of [state.settledUnseen, state.ownWatchDue]) {
    for (const [requestId, atMs] of seen) {
      if (nowMs - atMs <= WATCH_MAX_AGE_MS) break; // by arrival: the rest are younger
      seen.delete(requestId);
    }
  }
  let anyDue = false;
  for (const w of state.watched.values()) {
    // Well before its claim key expires (a missing key reads as "nobody claimed it"); no requester waits so long.
    if (nowMs - w.request.receivedAtMs > WATCH_MAX_AGE_MS) state.watched.delete(w.requestId);
    else if (w.dueMs <= nowMs) anyDue = true;
  }
  return anyDue;
}

/**
 * Step 2. Every notice the server passed on before this instance's PING is handled before the PONG resolves the
 * flush (nats.js runs subscription callbacks as it reads). False when the flush failed or timed out.
 */
async function noticesIn(p: ClaimedDeliveryParams): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), NOTICE_FLUSH_TIMEOUT_MS);
  });
  const flushed = p.messaging.flush().then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([flushed, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Step 4, for one watched request and its check's result. */
function settle(
  p: ClaimedDeliveryParams,
  state: DeliveryState,
  own: OwnRequest,
  w: Watch,
  token: string,
  result: ClaimCheck,
  nowMs: number,
): void {
  // Its notice came during the check (an owner stalled, not dead): settled, even if just taken here.
  if (state.settledUnseen.delete(w.requestId)) return;
  if (result.status === "held") {
    w.dueMs = nowMs + state.renewEveryMs;
    state.watched.set(w.requestId, w);
    return;
  }
  if (result.status === "done") return;
  const resend = result.status === "resend" ? result.bid : undefined;
  p.logger.info("auction request taken over from an instance that stopped renewing its claim", {
    at: "auction.takeover",
    ...auctionLogFields(w.request.data),
    ageMs: Date.now() - w.request.receivedAtMs,
    resend: resend !== undefined,
  });
  const work = own(w.request, w.requestId, token, resend).finally(() => state.takeovers.delete(work));
  state.takeovers.add(work);
}

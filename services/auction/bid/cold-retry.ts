import type { Logger } from "../../../shared/logging/create-logger";
import type { MessagingRequest } from "../../../shared/messaging/types";
import { auctionLogFields } from "../../../shared/protocol/auction-payload";
import { isColdRefusal } from "../../../shared/protocol/auction-refusal";
import { sleep } from "../../../shared/timing";
import type { RequestClaim } from "../delivery/types";
import type { ReservedBid } from "../request-claims";
import { refused, type Outcome } from "./outcome";

/**
 * How long a request refused for cold data (isColdRefusal) is retried before the refusal stands: the SDK waits
 * 6 s for bids (DEFAULT_AUCTION_TIMEOUT of nxtp-sdk 0.1.42), so a bid sent within 4 s still reaches it.
 */
export const DEFAULT_COLD_RETRY_WINDOW_MS = 4_000;
/** Pause between those retries: a poller tick writes balances every second at the defaults. */
const COLD_RETRY_PAUSE_MS = 200;

/** One try at the request; `reserved` is a bid reserved by an earlier try and not sent (re-send it). */
export type Attempt = (
  request: MessagingRequest,
  nowMs: number,
  claim?: RequestClaim,
  reserved?: ReservedBid,
) => Promise<Outcome>;

/**
 * The request's tries: a refusal for data not there yet (e.g. right after start, before the pollers' first
 * balances) is retried while the requester still listens, since a refusal is never answered and a silent one is
 * a lost swap. Under a claim, the request is claimed before the first wait (watchers take an unclaimed request
 * over once the lease would have run out); a claim lost there ends it as ClaimLost.
 */
export async function withColdRetry(
  attempt: Attempt,
  request: MessagingRequest,
  claim: RequestClaim | undefined,
  startedAtMs: number,
  p: { readonly nowMs: () => number; readonly windowMs: number; readonly logger: Logger },
): Promise<{ outcome: Outcome; coldRetries: number }> {
  const retryUntilMs = Date.now() + p.windowMs - COLD_RETRY_PAUSE_MS; // real time: tests may fix nowMs
  let outcome = await attempt(request, startedAtMs, claim);
  let coldRetries = 0;
  let reserved: ReservedBid | undefined;
  while (outcome.refusal !== undefined && isColdRefusal(outcome.refusal.code) && Date.now() < retryUntilMs) {
    if (coldRetries === 0 && claim !== undefined && !(await claim.hold().catch(() => true))) {
      outcome = refused("ClaimLost", "another auction instance took this request over");
      break;
    }
    if (coldRetries === 0) {
      p.logger.debug("auction waiting for cold data", {
        at: "auction.cold",
        ...auctionLogFields(request.data),
        code: outcome.refusal.code,
        detail: outcome.refusal.detail,
      });
    }
    await sleep(COLD_RETRY_PAUSE_MS);
    coldRetries += 1;
    reserved = outcome.reserved ?? reserved;
    outcome = await attempt(request, p.nowMs(), claim, reserved);
  }
  return { outcome, coldRetries };
}

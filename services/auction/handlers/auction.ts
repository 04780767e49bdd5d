import { errorMessage } from "../../../shared/errors";
import { routerMetrics } from "../../../shared/metrics/router-metrics";
import type { MessagingRequest } from "../../../shared/messaging/types";
import type { ReplicationGuard } from "../../../shared/coordination/replication";
import type { BidReservations } from "../../../shared/transfers/bid-reservations";
import { DEFAULT_COLD_RETRY_WINDOW_MS, withColdRetry, type Attempt } from "../bid/cold-retry";
import { refused, type Outcome, type Reply } from "../bid/outcome";
import { logOutcome } from "../bid/outcome-log";
import { chainFactsOf, createPriceRequest } from "../bid/price-request";
import { createReserveAndBid } from "../bid/reserve-and-bid";
import { createResendReserved } from "../bid/resend-reserved";
import { DEFAULT_WARM_UP_ROUNDS, startWarmUp } from "../bid/warm-up";
import type { RequestClaim } from "../delivery/types";
import type { AuctionContext } from "../context";
import type { InventoryCache } from "../inventory-cache";

/** Cached balances (pollers refresh them at least every 15 s while alive) older than this refuse the auction. */
export const DEFAULT_BALANCE_MAX_AGE_MS = 60_000;

export interface AuctionHandlerOptions {
  readonly balanceMaxAgeMs?: number;
  readonly coldRetryWindowMs?: number;
  /** Synthetic bids priced and encoded when the handler is created; 0 skips the warm-up. */
  readonly warmUpRounds?: number;
}

export interface AuctionHandlerDeps {
  readonly reservations: BidReservations;
  /**
   * redis.minReplicas > 0: the replica wait on the reservations' own connection (shared/coordination/replication.ts);
   * a bid is sent only once its reservation is on that many replicas. Undefined (no cost) when minReplicas is 0.
   */
  readonly replication?: ReplicationGuard;
  /** The pools' inventory targets (docs/auction.md, "Inventory decline"); no rule without it. */
  readonly inventory?: InventoryCache;
  readonly options?: AuctionHandlerOptions;
}

/** A request, with its claim when several instances receive every request; resolves false when the claim was lost. */
export type AuctionRequestHandler = (request: MessagingRequest, claim?: RequestClaim) => Promise<boolean>;

/**
 * `auction.request` (docs/auction.md, "Processing order"; docs/protocol.md#auction, hardened):
 * 1. price: modes → payload → chains → pool → expiry window → decimals → router fee and gas fee, pure
 *    (bid/price-request.ts);
 * 2. reserve, sign and answer: one atomic Redis step, the replica wait, the bid signed unless dry run, the answer
 *    (bid/reserve-and-bid.ts); a request taken over from an owner that died after reserving, or whose own
 *    reservation is already made, re-sends the reserved bid instead (bid/resend-reserved.ts);
 * 3. a refusal for cold data is retried while the requester still listens (bid/cold-retry.ts);
 * 4. the outcome logged once and counted (bid/outcome-log.ts). A refusal is never answered; nothing a requester
 *    sends can throw out of the handler.
 * No RPC happens here: balances come from Redis, prices, gas prices and decimals from the refreshers' cache. Once
 * created, the handler warms V8 with synthetic requests (bid/warm-up.ts).
 */
export function createAuctionHandler(ctx: AuctionContext, deps: AuctionHandlerDeps): AuctionRequestHandler {
  const options = deps.options ?? {};
  const chains = chainFactsOf(ctx.config);
  const price = createPriceRequest(ctx, chains);
  const reserveAndBid = createReserveAndBid(ctx, {
    reservations: deps.reservations,
    replication: deps.replication,
    inventory: deps.inventory,
    balanceMaxAgeMs: options.balanceMaxAgeMs ?? DEFAULT_BALANCE_MAX_AGE_MS,
  });
  const resendReserved = createResendReserved(ctx, chains, deps.replication);
  const respond: Reply = (request, data) => ctx.messaging.respond(request, data);

  // Steps 1 and 2, the path the warm-up runs too (into its own reply sink).
  const answer = async (
    request: MessagingRequest,
    nowMs: number,
    claim: RequestClaim | undefined,
    reply: Reply,
  ): Promise<Outcome> => {
    const priced = price(request.data, nowMs);
    if ("result" in priced) return priced;
    return reserveAndBid(request, priced, nowMs, claim, reply);
  };
  const attempt: Attempt = async (request, nowMs, claim, reserved) => {
    const again = reserved ?? claim?.resend;
    try {
      return again ? await resendReserved(request, again, claim) : await answer(request, nowMs, claim, respond);
    } catch (err) {
      return refused("InternalError", errorMessage(err));
    }
  };
  startWarmUp(ctx, price, answer, options.warmUpRounds ?? DEFAULT_WARM_UP_ROUNDS);

  const log = ctx.logger.child({ at: "auction.outcome" });
  const metrics = routerMetrics();
  const coldRetry = {
    nowMs: () => ctx.nowMs(),
    windowMs: options.coldRetryWindowMs ?? DEFAULT_COLD_RETRY_WINDOW_MS,
    logger: ctx.logger,
  };
  // With a claim (claimed-delivery.ts) the result says whether the request is settled: false when another
  // instance took it over, so this one must not mark it answered.
  return async (request, claim) => {
    const startedAtMs = ctx.nowMs();
    // Steps 1–3.
    const { outcome, coldRetries } = await withColdRetry(attempt, request, claim, startedAtMs, coldRetry);
    // Step 4.
    logOutcome(log, metrics, request, outcome, coldRetries, ctx.nowMs() - startedAtMs);
    return outcome.refusal?.code !== "ClaimLost";
  };
}

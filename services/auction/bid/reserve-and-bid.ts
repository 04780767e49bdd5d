import { errorMessage } from "../../../shared/errors";
import type { MessagingRequest } from "../../../shared/messaging/types";
import { isLiquidityRefusal } from "../../../shared/protocol/auction-refusal";
import { transferKey } from "../../../shared/queues";
import type { ReplicationGuard } from "../../../shared/coordination/replication";
import type { BidReservations, ReserveParams } from "../../../shared/transfers/bid-reservations";
import type { RequestClaim } from "../delivery/types";
import type { AuctionContext } from "../context";
import type { InventoryCache } from "../inventory-cache";
import type { ReservedBid } from "../request-claims";
import { bidFor, bidResponse, bidTerms, signBid } from "./bid-fields";
import { refused, type Outcome, type Reply } from "./outcome";
import type { Priced } from "./price-request";

/**
 * How long after `bidExpiry` a reservation still holds when the sending chain's poller has not pinned it yet:
 * a user may prepare right before `bidExpiry`, and the poller sees that prepare only after the sending chain's
 * confirmations. Two minutes covers most chains' confirmations; a later prepare finds the liquidity re-checked
 * on chain at the receiving prepare (and is cancelled back to the user if it is gone).
 */
export const RESERVATION_GRACE_SEC = 120;

export interface ReserveAndBidDeps {
  readonly reservations: BidReservations;
  /** The replica wait on the reservations' connection; undefined (no cost) when redis.minReplicas is 0. */
  readonly replication?: ReplicationGuard;
  readonly inventory?: InventoryCache;
  /** Cached balances older than this refuse the auction. */
  readonly balanceMaxAgeMs: number;
}

export type ReserveAndBid = (
  request: MessagingRequest,
  priced: Priced,
  nowMs: number,
  claim: RequestClaim | undefined,
  reply: Reply,
) => Promise<Outcome>;

/**
 * A priced request's steps 8–10 (docs/auction.md, "Processing order"):
 * 8. one atomic Redis step: rate limit, balance and gas freshness, liquidity net of hard holds and of unprepared
 *    bids up to their share, inventory, signer gas, then (a real bid only) the bid's promise and rate stamp;
 *    fenced on the request's claim when there is one;
 * 9. with redis.minReplicas > 0, a real bid waits for its reservation on that many replicas, then is signed
 *    (a bid never sent gives its promise back, except under a claim: see notSentUnreplicated);
 * 10. the answer, and in the same synchronous turn the claim's settled notice.
 */
export function createReserveAndBid(ctx: AuctionContext, deps: ReserveAndBidDeps): ReserveAndBid {
  const { reservations, replication } = deps;
  return async (request, priced, nowMs, claim, reply) => {
    const { payload, sending, receiving } = priced;
    const terms = bidTerms(priced);
    const commit = !payload.dryRun;
    // Step 8.
    const reservation = reservationOf(ctx, deps, priced, nowMs, terms, claim);
    const since = replication === undefined ? 0 : replication.mark();
    let reserved;
    try {
      reserved = await reservations.reserve(reservation);
    } catch (err) {
      return refused("StoreUnavailable", `redis: ${errorMessage(err)}`);
    }
    if (reserved.code !== "ok") {
      if (!isLiquidityRefusal(reserved.code)) return refused(reserved.code, reserved.detail);
      return {
        ...refused(reserved.code, reserved.detail),
        refusedVolume: {
          route: `${payload.sendingChainId}-${payload.receivingChainId}`,
          usd: ctx.fees.usdValue(payload.sendingChainId, payload.sendingAssetId, priced.amount, priced.inputDecimals),
        },
      };
    }
    // Only this bid's promise goes: the transfer's earlier bids were sent and stay promised.
    const withdraw = (): Promise<unknown> => reservations.withdraw(reservation).catch(() => undefined);

    // Step 9.
    const bid = bidFor(payload, ctx.routerAddress, sending, receiving, terms);
    let bidSignature: string | null = null;
    if (commit) {
      if (replication !== undefined) {
        try {
          await replication.ensure(since);
        } catch (err) {
          return notSentUnreplicated(err, claim, terms, withdraw);
        }
      }
      try {
        bidSignature = await signBid(ctx.signer, bid);
      } catch (err) {
        // The bid is never sent: its promise must not hold liquidity until it lapses.
        await withdraw();
        return refused("SignerUnavailable", errorMessage(err));
      }
    }
    // Step 10.
    reply(request, bidResponse(bid, bidSignature, terms.gasFee));
    claim?.published();
    return {
      result: commit ? "bid" : "quote",
      fields: { amountReceived: terms.amountReceived, gasFee: terms.gasFee, bidExpiry: terms.bidExpiry },
    };
  };
}

/** Step 8's parameters, one object shape for every caller (the warm-up's calls and real requests alike). */
function reservationOf(
  ctx: AuctionContext,
  deps: ReserveAndBidDeps,
  priced: Priced,
  nowMs: number,
  terms: ReservedBid,
  claim: RequestClaim | undefined,
): ReserveParams {
  const { payload, sending, receiving, quote } = priced;
  const inventory = deps.inventory;
  return {
    // Named fields, not `...payload`: a spread that a later key overrides (amount) costs ~15 µs per request.
    sendingChainId: payload.sendingChainId,
    sendingAssetId: payload.sendingAssetId,
    receivingChainId: payload.receivingChainId,
    receivingAssetId: payload.receivingAssetId,
    transferKey: transferKey(payload.transactionId, payload.user),
    amount: quote.amountReceived,
    nowMs,
    untilMs: (terms.bidExpiry + RESERVATION_GRACE_SEC) * 1000,
    maxAgeMs: deps.balanceMaxAgeMs,
    rateLimitMs: ctx.config.requestLimit,
    minGasSending: sending.minGasWei,
    minGasReceiving: receiving.minGasWei,
    commit: !payload.dryRun,
    // The inventory rule's keep, from the cache (no I/O); undefined without targets for the pool.
    keep:
      inventory === undefined
        ? undefined
        : inventory.keepFor({
            sendingChainId: payload.sendingChainId,
            sendingAssetId: payload.sendingAssetId,
            receivingChainId: payload.receivingChainId,
            receivingAssetId: payload.receivingAssetId,
            amount: priced.amount,
            inputDecimals: priced.inputDecimals,
            outputDecimals: priced.outputDecimals,
          }),
    // Fenced on the request's claim: an instance that lost it (another took the request over) reserves nothing.
    // Always the key, undefined without a claim: one object shape whether the warm-up or a request built it.
    claim:
      claim === undefined
        ? undefined
        : {
            key: claim.key,
            token: claim.token,
            bidExpiry: terms.bidExpiry,
            gasFee: terms.gasFee,
            leaseMs: claim.reservedLeaseMs,
            keepMs: claim.keepMs,
          },
  };
}

/**
 * Step 9's replica wait failed: a reservation a failover could forget would let the liquidity be promised twice,
 * so the bid is not sent. Without a claim its promise is withdrawn. Under a claim the reservation stays (until it
 * lapses) and the claim is in state `r` (a second reserve would be refused): the cold retry, or a taker, re-sends
 * this very bid once its own replica wait passes, so the bid is never sent without its promise.
 */
async function notSentUnreplicated(
  err: unknown,
  claim: RequestClaim | undefined,
  terms: ReservedBid,
  withdraw: () => Promise<unknown>,
): Promise<Outcome> {
  if (claim === undefined) {
    await withdraw();
    return refused("StoreNotReplicated", errorMessage(err));
  }
  return { ...refused("StoreNotReplicated", errorMessage(err)), reserved: terms };
}

import { errorMessage } from "../../../shared/errors";
import type { MessagingRequest } from "../../../shared/messaging/types";
import { parseAuctionPayload } from "../../../shared/protocol/auction-payload";
import type { ReplicationGuard } from "../../../shared/coordination/replication";
import type { RequestClaim } from "../delivery/types";
import type { AuctionContext } from "../context";
import type { ReservedBid } from "../request-claims";
import { bidFor, bidResponse, signBid } from "./bid-fields";
import { refused, type Outcome } from "./outcome";
import type { ChainFacts } from "./price-request";

export type ResendReserved = (request: MessagingRequest, stored: ReservedBid, claim?: RequestClaim) => Promise<Outcome>;

/**
 * A takeover of a request whose owner died after reserving (request-claims.ts, state `r`), or this instance's own
 * retry after its replica wait failed: the same bid again, from the terms the reservation stored, nothing
 * reserved. The signature is deterministic (RFC 6979), so if the owner did publish before dying the requester gets
 * the same bytes twice, never a second bid.
 */
export function createResendReserved(
  ctx: AuctionContext,
  chains: ReadonlyMap<number, ChainFacts>,
  replication: ReplicationGuard | undefined,
): ResendReserved {
  return async (request, stored, claim) => {
    if (replication !== undefined) {
      // The owner's reservation may never have reached the replicas (its own wait failed): not without them.
      try {
        await replication.ensure(replication.mark());
      } catch (err) {
        return refused("StoreNotReplicated", errorMessage(err));
      }
    }
    const parsed = parseAuctionPayload(request.data);
    const sending = parsed.ok ? chains.get(parsed.payload.sendingChainId) : undefined;
    const receiving = parsed.ok ? chains.get(parsed.payload.receivingChainId) : undefined;
    if (!parsed.ok || sending === undefined || receiving === undefined) {
      return refused("InternalError", "a reserved request no longer parses"); // the owner parsed the same bytes
    }
    const bid = bidFor(parsed.payload, ctx.routerAddress, sending, receiving, stored);
    let bidSignature: string | null = null;
    if (!parsed.payload.dryRun) {
      try {
        bidSignature = await signBid(ctx.signer, bid);
      } catch (err) {
        return refused("SignerUnavailable", errorMessage(err)); // the promise stays: the owner may have sent it
      }
    }
    ctx.messaging.respond(request, bidResponse(bid, bidSignature, stored.gasFee));
    claim?.published();
    return {
      result: parsed.payload.dryRun ? "quote" : "bid",
      fields: { amountReceived: bid.amountReceived, gasFee: stored.gasFee, bidExpiry: bid.bidExpiry, resent: true },
    };
  };
}

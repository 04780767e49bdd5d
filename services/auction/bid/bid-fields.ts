import type { AuctionBid, AuctionPayload } from "../../../shared/protocol/types";
import { encodeBidFast } from "../../../shared/protocol/bid-encoder";
import { BID_EXPIRY_SEC } from "../../../shared/protocol/expiry";
import { keccak256Bytes } from "../../../shared/signer/native-keccak";
import { sanitizeSignatureV, type RouterSigner } from "../../../shared/signer/router-signer";
import type { ReservedBid } from "../request-claims";
import type { ChainFacts, Priced } from "./price-request";

/** The router's terms for a priced request: what it promises, until when, and the gas fee it charged. */
export function bidTerms(priced: Priced): ReservedBid {
  return {
    amountReceived: priced.quote.amountReceived.toString(),
    bidExpiry: priced.nowSec + BID_EXPIRY_SEC,
    gasFee: priced.quote.gasFee.toString(),
  };
}

/**
 * The one mapping from a request and the router's terms to a bid (docs/protocol.md#auction-response): the fields
 * in ABI order, everything but the router's own fields (router, amountReceived, both TransactionManagers,
 * bidExpiry) copied from the request unchanged. A fresh bid, a re-sent one and the warm-up's all come from here.
 */
export function bidFor(
  p: AuctionPayload,
  routerAddress: string,
  sending: ChainFacts,
  receiving: ChainFacts,
  terms: ReservedBid,
): AuctionBid {
  return {
    user: p.user,
    router: routerAddress,
    initiator: p.initiator,
    sendingChainId: p.sendingChainId,
    sendingAssetId: p.sendingAssetId,
    amount: p.amount,
    receivingChainId: p.receivingChainId,
    receivingAssetId: p.receivingAssetId,
    amountReceived: terms.amountReceived,
    receivingAddress: p.receivingAddress,
    transactionId: p.transactionId,
    expiry: p.expiry,
    callDataHash: p.callDataHash,
    callTo: p.callTo,
    encryptedCallData: p.encryptedCallData,
    sendingChainTxManagerAddress: sending.txManager,
    receivingChainTxManagerAddress: receiving.txManager,
    bidExpiry: terms.bidExpiry,
  };
}

/** The answer to an `auction.request` (docs/protocol.md#auction-response); a null signature for a dry run. */
export function bidResponse(
  bid: AuctionBid,
  bidSignature: string | null,
  gasFee: string,
): { bid: AuctionBid; bidSignature: string | null; gasFeeInReceivingToken: string } {
  return { bid, bidSignature, gasFeeInReceivingToken: gasFee };
}

/**
 * The 32 bytes the router signs (EIP-191) for a bid: keccak256 of its encoding (docs/protocol.md#bid-encoding), hashed
 * natively.
 */
export function bidDigest(bid: AuctionBid): Buffer {
  return keccak256Bytes(Buffer.from(encodeBidFast(bid).slice(2), "hex"));
}

/** The bid's signature as the SDK checks it. Deterministic (RFC 6979): the same bid signed twice gives the same bytes. */
export async function signBid(signer: RouterSigner, bid: AuctionBid): Promise<string> {
  return sanitizeSignatureV(await signer.signMessage(bidDigest(bid)));
}

import { AuctionRefusal, refusal } from "./auction-refusal";
import {
  AUCTION_EXPIRY_BUFFER_SEC,
  BID_EXPIRY_SEC,
  RECEIVER_EXPIRY_MAX_WINDOW_SEC,
  RECEIVER_EXPIRY_MIN_WINDOW_SEC,
  RECEIVER_EXPIRY_OFFSET_SEC,
} from "./expiry";

/**
 * How long after `bidExpiry` the receiving prepare may still happen: the user prepares on the sending chain
 * at the latest at `bidExpiry` (verify-sender.ts checks the sending prepare's block time), then come the
 * sending chain's confirmations, the poller's tick, the submitter's queue and its retries. One hour covers
 * 60 confirmations on a 2-second chain many times over; a prepare later than that is refused by the receiving
 * check anyway (receiver-expiry-invalid), with the user refunded by the sender cancel.
 */
export const PREPARE_DELAY_MARGIN_SEC = 3600;

export interface AuctionExpiryParams {
  /** The request's sending-side expiry, unix seconds. */
  readonly expiry: number;
  readonly nowSec: number;
}

/**
 * docs/protocol.md#expiry (AuctionExpired: `expiry <= now + 300`), plus the window the receiving prepare will require
 * (verify-sender.ts, expiry.ts): `receiverExpiry = expiry − 1 d` must lie strictly inside (t + 1 d, t + 7 d)
 * at the prepare time t. t lies in [now, now + BID_EXPIRY_SEC + PREPARE_DELAY_MARGIN_SEC], so the bid is made
 * only when that holds for every such t:
 *   expiry − 1 d − (now + 300 + margin) > 1 d   and   expiry − 1 d − now < 7 d.
 * The router thus never signs a bid whose transfer it would refuse to prepare.
 */
export function checkAuctionExpiry(params: AuctionExpiryParams): AuctionRefusal | null {
  const { expiry, nowSec } = params;
  if (expiry <= nowSec + AUCTION_EXPIRY_BUFFER_SEC) {
    return refusal("AuctionExpired", `expiry ${expiry} is not after now + ${AUCTION_EXPIRY_BUFFER_SEC} s`);
  }
  const receiverExpiry = expiry - RECEIVER_EXPIRY_OFFSET_SEC;
  const latestPrepareSec = nowSec + BID_EXPIRY_SEC + PREPARE_DELAY_MARGIN_SEC;
  if (receiverExpiry - latestPrepareSec <= RECEIVER_EXPIRY_MIN_WINDOW_SEC) {
    return refusal(
      "ExpiryOutOfWindow",
      `expiry ${expiry} is too close: the receiving expiry would be under 1 d by the latest prepare time`,
    );
  }
  if (receiverExpiry - nowSec >= RECEIVER_EXPIRY_MAX_WINDOW_SEC) {
    return refusal("ExpiryOutOfWindow", `expiry ${expiry} is too far: the receiving expiry would be 7 d or more away`);
  }
  return null;
}

/** The expiry range (exclusive bounds) the auction accepts at `nowSec`, for docs and clients. */
export function acceptedExpiryRange(nowSec: number): { readonly minExclusive: number; readonly maxExclusive: number } {
  return {
    minExclusive:
      nowSec + BID_EXPIRY_SEC + PREPARE_DELAY_MARGIN_SEC + RECEIVER_EXPIRY_OFFSET_SEC + RECEIVER_EXPIRY_MIN_WINDOW_SEC,
    maxExclusive: nowSec + RECEIVER_EXPIRY_OFFSET_SEC + RECEIVER_EXPIRY_MAX_WINDOW_SEC,
  };
}

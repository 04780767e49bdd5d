/**
 * Time rules of NXTP v0, all in unix seconds. Time is always a parameter (`nowSec`): nothing here reads a
 * clock.
 */

/**
 * TransactionManager `MIN_TIMEOUT` / `MAX_TIMEOUT` (docs/protocol.md#structs): bounds of `expiry - block.timestamp` at
 * prepare.
 */
export const MIN_TIMEOUT_SEC = 86400;
export const MAX_TIMEOUT_SEC = 30 * 86400;

/**
 * The receiving side expires this much earlier than the sending side (docs/protocol.md#expiry): the router's window to
 * claim.
 */
export const RECEIVER_EXPIRY_OFFSET_SEC = 86400;

/** docs/protocol.md#expiry: the receiving expiry must be strictly between now + 1 d and now + 7 d. */
export const RECEIVER_EXPIRY_MIN_WINDOW_SEC = 86400;
export const RECEIVER_EXPIRY_MAX_WINDOW_SEC = 7 * 86400;

/** docs/protocol.md#expiry: the auction refuses a request whose `expiry <= now + 300`. */
export const AUCTION_EXPIRY_BUFFER_SEC = 300;

/** A bid is valid this long after the auction (`bidExpiry = now + 300`, docs/protocol.md#auction-response). */
export const BID_EXPIRY_SEC = 300;

/** docs/protocol.md#cancel-rules: a sender cancel before expiry waits this long after the prepare block. */
export const SENDER_PREPARE_BUFFER_SEC = 780;

export function receiverExpiryFor(senderExpiry: number): number {
  return senderExpiry - RECEIVER_EXPIRY_OFFSET_SEC;
}

export interface ReceiverExpiryParams {
  receiverExpiry: number;
  nowSec: number;
}

/** `86400 < receiverExpiry - now < 604800`, strict on both sides. */
export function isReceiverExpiryValid(params: ReceiverExpiryParams): boolean {
  const window = params.receiverExpiry - params.nowSec;
  return window > RECEIVER_EXPIRY_MIN_WINDOW_SEC && window < RECEIVER_EXPIRY_MAX_WINDOW_SEC;
}

export interface BidExpiryParams {
  bidExpiry: number;
  nowSec: number;
}

/**
 * A bid is valid while `bidExpiry > now` (the original's comparison, applied to `bidExpiry`:
 * docs/protocol.md#deviation-bid-expiry).
 */
export function isBidExpired(params: BidExpiryParams): boolean {
  return params.bidExpiry <= params.nowSec;
}

/** A transaction side is expired once `now > expiry`: the contract allows fulfill up to and including `expiry`. */
export function isTransactionExpired(expiry: number, nowSec: number): boolean {
  return nowSec > expiry;
}

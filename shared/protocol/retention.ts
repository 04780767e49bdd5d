import { MAX_TIMEOUT_SEC, RECEIVER_EXPIRY_OFFSET_SEC } from "./expiry";

/**
 * How long Redis keeps what the router wrote about one transfer once it no longer drives anything: a closed
 * transfer record, the transfer's decision, a finished send record. Nothing acts on a transfer after both
 * of its sides expired (an expired side can only be cancelled, and the contract refuses a second execution of
 * any call), so each key lives until then plus a margin, instead of the contract's 30-day maximum for every
 * transfer. Time is a parameter, as in expiry.ts.
 */

/** Past both sides' expiry: a late poller tick, a re-org rewind, an operator looking a swap up. */
export const RETENTION_MARGIN_SEC = 86_400;
/** A key written after its transfer expired (a late cancel) is still kept this long. */
export const MIN_RETENTION_SEC = RETENTION_MARGIN_SEC;
/** No transfer outlives this: the contract's MAX_TIMEOUT from the prepare, plus the offset and the margin. */
export const MAX_RETENTION_SEC = MAX_TIMEOUT_SEC + RECEIVER_EXPIRY_OFFSET_SEC + RETENTION_MARGIN_SEC;

/**
 * Seconds from `nowSec` to keep a key about the transfer whose side (either one) expires at `expirySec`. The
 * receiving side expires RECEIVER_EXPIRY_OFFSET_SEC before the sending side, so adding it once covers both
 * sides whichever one `expirySec` is (a sending-side expiry is kept one day longer than it needs: cheap).
 */
export function transferRetentionSec(expirySec: number, nowSec: number): number {
  const wanted = Math.ceil(expirySec + RECEIVER_EXPIRY_OFFSET_SEC + RETENTION_MARGIN_SEC - nowSec);
  if (!Number.isFinite(wanted)) return MAX_RETENTION_SEC;
  return Math.min(MAX_RETENTION_SEC, Math.max(MIN_RETENTION_SEC, wanted));
}

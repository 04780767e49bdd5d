/**
 * How old the reads behind a cancel may be. The poller reads a batch of open transfers at once (their reconcile
 * against both chains, then the other sides in one MGET) and decides them one after another, so the last record
 * of a batch is decided after every earlier one: with slow decisions (a re-read over a slow RPC, a slow Redis)
 * its reads can be seconds old. A cancel is the one decision that relies on what it read (no receiving side, or
 * one that is cancelled): it must never rely on reads older than this.
 *
 * The bound is the poller's default poll interval: a cancel never relies on reads older than a tick of its own
 * would have given it. A batch's decisions normally take milliseconds each, so a fresh batch read is used as it
 * is and only a slow batch pays for a second read.
 */
export const MAX_CANCEL_READ_AGE_MS = 1_000;

/** What a batch read for one record: both sides agreed with the chains (`fresh`), as of `readAtMs` (wall clock). */
export interface BatchReads {
  readonly fresh: boolean;
  /** When the batch's first read started: its oldest read is no older than this. */
  readonly readAtMs: number;
}

/**
 * Whether a cancel may rely on its batch's reads, or must read both sides again (and decide again from that)
 * first. A clock that went backwards makes the age unknown: read again.
 */
export function cancelMayUseBatchReads(
  reads: BatchReads,
  nowMs: number,
  maxAgeMs: number = MAX_CANCEL_READ_AGE_MS,
): boolean {
  const ageMs = nowMs - reads.readAtMs;
  return reads.fresh && ageMs >= 0 && ageMs <= maxAgeMs;
}

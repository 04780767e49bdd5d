import { errorCode } from "../errors";

/**
 * The retry policy of the router's claim (fulfill-sender): the claim is the router's income for a receiving
 * side it already paid, so one bad read, a stall or a reverted transaction must not end it. Until the sending
 * side's expiry the job is parked and run again (re-reading the chain each time), with a doubling delay,
 * outside BullMQ's attempts. Pure policy; the processor applies it.
 */

/** First park after a failure; doubles per run of the job... */
export const CLAIM_RETRY_FIRST_DELAY_MS = 5_000;
/** ...up to this. */
export const CLAIM_RETRY_MAX_DELAY_MS = 5 * 60_000;
/** Less than this left before the sending expiry: each failure is logged at error level. */
export const CLAIM_ERROR_BELOW_SEC = 24 * 3600;
/** Less than this left: each failure is an alert (`alert: true`); the claim is about to be lost. */
export const CLAIM_ALERT_BELOW_SEC = 6 * 3600;

/**
 * Failures a new run cannot change: the claim ends (SENDER_EXPIRED alerts on its own). Everything else,
 * retriable or not (a revert at estimation, a reverted transaction, a sending side a lagging provider does
 * not show, exhausted nonces), is retried until the expiry.
 */
const TERMINAL_CLAIM_CODES: ReadonlySet<string> = new Set([
  "SENDER_EXPIRED",
  "INVALID_USER_SIGNATURE",
  "INVALID_JOB",
  "TX_RECORD_MISMATCH",
  "TRANSFER_MISMATCH",
  "CHAIN_NOT_CONFIGURED",
  // Another processor owns the job (lost lock): it carries on, this one must not park it.
  "TX_RECORD_CONFLICT",
]);

export function claimKeepsTrying(err: unknown): boolean {
  return !TERMINAL_CLAIM_CODES.has(errorCode(err));
}

/** Terminal failure reasons as BullMQ stores them (`CODE: message`), for a poller deciding on a failed claim. */
export function claimFailureIsTerminal(failedReason: string | undefined): boolean {
  const code = /^([A-Z0-9_]+):/.exec(failedReason ?? "")?.[1];
  return code !== undefined && TERMINAL_CLAIM_CODES.has(code) && code !== "TX_RECORD_CONFLICT";
}

/** Delay before run `runs + 1` (runs ≥ 1), capped, and never past the expiry itself (`expiryMs`). */
export function claimRetryAtMs(nowMs: number, runs: number, expiryMs: number): number {
  const delayMs = Math.min(
    CLAIM_RETRY_MAX_DELAY_MS,
    CLAIM_RETRY_FIRST_DELAY_MS * 2 ** Math.min(Math.max(runs - 1, 0), 20),
  );
  return Math.max(nowMs + 1_000, Math.min(nowMs + delayMs, expiryMs));
}

export type ClaimLogLevel = "warn" | "error" | "alert";

export function claimLogLevel(secondsToExpiry: number): ClaimLogLevel {
  if (secondsToExpiry < CLAIM_ALERT_BELOW_SEC) {
    return "alert";
  }
  return secondsToExpiry < CLAIM_ERROR_BELOW_SEC ? "error" : "warn";
}

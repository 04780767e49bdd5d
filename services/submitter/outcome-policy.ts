import { TransactionRevertedError } from "../../shared/chain/errors";
import { isRetriable, notYetUntilMs } from "../../shared/errors";
import { claimKeepsTrying, claimLogLevel, claimRetryAtMs, type ClaimLogLevel } from "../../shared/protocol/claim-retry";
import { TX_JOB } from "../../shared/queues/jobs";
import { isCancellable } from "./operations/errors";
import { SenderLeaseLostError, SubmitterShutdownError } from "./send/errors";

/**
 * What follows from a job's error: the submitter's one error → outcome policy. Pure (no I/O, no clock: the caller
 * passes `nowMs`), so every branch is tested on its own (test/unit/outcome-policy.test.ts), and docs/submitter.md's
 * table of errors and outcomes is checked against it. job/apply-outcome.ts gathers the facts and applies the answer.
 * The rules, first match wins:
 * 1. shutdown or a lost sender lease → hand the job back to the queue (no attempt used);
 * 2. "not yet" (RouterError.notYet: a time rule, liquidity in flight, a nonce taken without proof, a ledger
 *    naming or replica acknowledgement Redis refused) → park until its `retryAtMs` (no attempt used). Before the
 *    claim's park, which archives a reverted record whose revert must be named to the ledger first;
 * 3. the router's claim (fulfill-sender) failing for a reason a later run may not meet → park with a doubling
 *    delay until the sending side's expiry (plus slack), its reverted record archived first;
 * 4. the job's transaction mined (seen with status 1 in this run, or a retriable error while its record is
 *    confirmed), and the error not a revert → park 1 s: the next run completes from the record;
 * 5. retriable → BullMQ's attempts and backoff;
 * 6. otherwise fail for good; a receiving prepare refused for a cancellable reason, or whose transaction reverted,
 *    also refunds the sending side.
 * Rules 1–4 need the job's lock (`canMove`); without it, or after a refused move, only 5 and 6 apply.
 */

/** A job whose transaction is mined, stopped by an error, runs again this soon. */
export const MINED_RETRY_MS = 1_000;

/**
 * Chain clocks may trail the wall clock: a claim is still tried this long after the expiry by wall time, and the
 * operation itself (which reads the chain's time) decides when it is expired (SENDER_EXPIRED, terminal).
 */
export const CLAIM_EXPIRY_SLACK_MS = 10 * 60_000;

export interface OutcomeFacts {
  readonly jobName: string;
  /** The run holds the job's lock and no move was refused yet: the job can be parked or handed back. */
  readonly canMove: boolean;
  readonly nowMs: number;
  /** This run saw the job's transaction mined with status 1. */
  readonly minedOk: boolean;
  /** The job's send record says confirmed (read only when it changes the answer: recordStatusMatters). */
  readonly recordConfirmed: boolean;
  /** BullMQ's attempts used before this one, and allowed. */
  readonly attemptsMade: number;
  readonly attempts: number;
  /** A claim (fulfill-sender): the sending side's expiry (chain seconds) and the runs started so far. */
  readonly claim?: { readonly expirySec: number; readonly runs: number };
}

export type ParkReason = "not-yet" | "claim" | "mined";

export type Outcome =
  | { readonly kind: "hand-over" }
  | { readonly kind: "park"; readonly reason: Exclude<ParkReason, "claim">; readonly untilMs: number }
  | {
      readonly kind: "park";
      readonly reason: "claim";
      readonly untilMs: number;
      /** Archive the job's reverted record before parking, or the next run would only find it again. */
      readonly archiveReverted: true;
      readonly secondsToExpiry: number;
      readonly logLevel: ClaimLogLevel;
    }
  | { readonly kind: "retry"; readonly lastAttempt: boolean }
  | { readonly kind: "fail"; readonly refund: boolean };

export function decideOutcome(error: unknown, facts: OutcomeFacts): Outcome {
  if (facts.canMove && (error instanceof SubmitterShutdownError || error instanceof SenderLeaseLostError)) {
    return { kind: "hand-over" };
  }
  const notYetUntil = notYetUntilMs(error);
  if (facts.canMove && notYetUntil !== undefined) {
    return { kind: "park", reason: "not-yet", untilMs: notYetUntil };
  }
  const claimPark =
    facts.canMove && facts.jobName === TX_JOB.fulfillSender && facts.claim && claimKeepsTrying(error)
      ? parkClaim(facts.claim, facts.nowMs)
      : undefined;
  if (claimPark) {
    return claimPark;
  }
  const mined = facts.minedOk || (isRetriable(error) && facts.recordConfirmed);
  if (facts.canMove && !(error instanceof TransactionRevertedError) && mined) {
    return { kind: "park", reason: "mined", untilMs: facts.nowMs + MINED_RETRY_MS };
  }
  if (isRetriable(error)) {
    return { kind: "retry", lastAttempt: facts.attemptsMade + 1 >= facts.attempts };
  }
  return {
    kind: "fail",
    refund: facts.jobName === TX_JOB.prepareReceiver && (isCancellable(error) || isRevert(error)),
  };
}

/**
 * A receiving prepare's transaction mined with status 0 (or an estimate's revert without a known reason): the job
 * never sends again, so the sender's refund is enqueued. While the transfer's decision says "prepare", that refund
 * goes ahead only once the chain proves the revert final (shared/chain/reverted-prepare.ts).
 */
function isRevert(error: unknown): boolean {
  return error instanceof TransactionRevertedError && error.revertCode === undefined;
}

/** Whether the job's record status can change the answer: the caller reads the record only then. */
export function recordStatusMatters(error: unknown, facts: Omit<OutcomeFacts, "recordConfirmed">): boolean {
  const confirmed = decideOutcome(error, { ...facts, recordConfirmed: true });
  const notConfirmed = decideOutcome(error, { ...facts, recordConfirmed: false });
  return confirmed.kind !== notConfirmed.kind;
}

/** Rule 3: undefined once the sending side's expiry (plus slack) has passed: the claim then ends by rules 5–6. */
function parkClaim(claim: NonNullable<OutcomeFacts["claim"]>, nowMs: number): Outcome | undefined {
  const expiryMs = claim.expirySec * 1000;
  if (nowMs >= expiryMs + CLAIM_EXPIRY_SLACK_MS) {
    return undefined;
  }
  const secondsToExpiry = Math.round((expiryMs - nowMs) / 1000);
  return {
    kind: "park",
    reason: "claim",
    untilMs: claimRetryAtMs(nowMs, claim.runs, expiryMs + CLAIM_EXPIRY_SLACK_MS),
    archiveReverted: true,
    secondsToExpiry,
    logLevel: claimLogLevel(secondsToExpiry),
  };
}

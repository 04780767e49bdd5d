import { UnrecoverableError, WaitingError } from "bullmq";
import { errorCode, errorMessage } from "../../../shared/errors";
import { TX_JOB, type PrepareReceiverJobData } from "../../../shared/queues";
import { decideOutcome, recordStatusMatters, type Outcome, type OutcomeFacts } from "../outcome-policy";
import { enqueueSenderRefund } from "./enqueue-sender-refund";
import { logOutcome } from "./log-outcome";
import { parkJob } from "./park-job";
import type { FailedRun } from "./tx-job";

/**
 * The error → BullMQ's decision: the policy (outcome-policy.ts) decides from the error and the run's facts, and
 * this applies it: a handover (moveToWait), a park in the delayed set (parkJob: no attempt used), a retry (the
 * error itself: attempts and backoff apply) or a failure (UnrecoverableError with the cause's code first in the
 * message), with the sender's refund enqueued when the policy says so. A move BullMQ refuses (the lock is gone)
 * is decided again without moving: retry or fail.
 */
export async function toBullMqError(p: FailedRun): Promise<Error> {
  const { err, job, logger } = p;
  const code = errorCode(err);
  const facts = await outcomeFacts(p);
  let outcome = decideOutcome(err, facts);
  if (outcome.kind === "hand-over" || outcome.kind === "park") {
    const moved = p.token ? await applyMove(p, p.token, code, outcome) : undefined;
    if (moved) {
      return moved;
    }
    outcome = decideOutcome(err, { ...facts, canMove: false });
  }
  if (outcome.kind === "retry") {
    logOutcome(logger, outcome.lastAttempt ? "failed" : "retry", { ...p, code, error: errorMessage(err) });
    return err instanceof Error ? err : new Error(errorMessage(err));
  }
  logOutcome(logger, "failed", { ...p, code, error: errorMessage(err) });
  if (outcome.kind === "fail" && outcome.refund) {
    await enqueueSenderRefund(p.ctx, job.data as PrepareReceiverJobData, code, logger);
  }
  return new UnrecoverableError(`${code}: ${errorMessage(err)}`);
}

/**
 * The facts the policy decides on. The job's record is read only when its status changes the answer (a retriable
 * error, not seen mined in this run): it tells whether the transaction is confirmed.
 */
async function outcomeFacts(p: FailedRun): Promise<OutcomeFacts> {
  const { job } = p;
  // Read defensively: the error may be the job data's own (INVALID_JOB).
  const expirySec = (job.data as { txData?: { expiry?: unknown } }).txData?.expiry;
  const facts = {
    jobName: job.name,
    canMove: p.token !== undefined,
    nowMs: Date.now(),
    minedOk: p.trace.minedOk === true,
    attemptsMade: job.attemptsMade,
    attempts: job.opts.attempts ?? 1,
    claim:
      job.name === TX_JOB.fulfillSender && typeof expirySec === "number"
        ? { expirySec, runs: job.attemptsStarted }
        : undefined,
  };
  if (!job.id || !recordStatusMatters(p.err, facts)) {
    return { ...facts, recordConfirmed: false };
  }
  const record = await p.ctx.records.load(job.id).catch(() => undefined);
  return { ...facts, recordConfirmed: record?.status === "confirmed" };
}

/** Hands the job back, or parks it (parkJob); undefined when BullMQ refuses the move. */
async function applyMove(
  p: FailedRun,
  token: string,
  code: string,
  outcome: Extract<Outcome, { kind: "hand-over" | "park" }>,
): Promise<Error | undefined> {
  if (outcome.kind === "park") {
    return parkJob(p, token, code, outcome);
  }
  try {
    // Back to the head of the queue for the lease holder; a handover is not a failed attempt. After a lost
    // lease the new holder usually took the job already (this move then fails: nothing more to do here).
    await p.job.moveToWait(token);
    logOutcome(p.logger, "handover", { ...p, code });
    return new WaitingError();
  } catch (moveErr) {
    p.logger.warn("could not hand the job back; it will be retried", {
      at: "submitter.job",
      error: errorMessage(moveErr),
    });
    return undefined;
  }
}

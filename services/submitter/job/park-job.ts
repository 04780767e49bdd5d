import { DelayedError } from "bullmq";
import { errorMessage } from "../../../shared/errors";
import type { FulfillSenderJobData } from "../../../shared/queues";
import type { Outcome } from "../outcome-policy";
import { logOutcome } from "./log-outcome";
import type { FailedRun } from "./tx-job";

/**
 * The one job-parking step: the job waits in the delayed set until `untilMs` without using an attempt. A claim's
 * reverted record is archived first and the claim's failure logged at warn, error, then alert level as the
 * sending side's expiry nears. Undefined when the job cannot be parked (BullMQ's retry rules then apply).
 */
export async function parkJob(
  p: FailedRun,
  token: string,
  code: string,
  outcome: Extract<Outcome, { kind: "park" }>,
): Promise<Error | undefined> {
  const { job, logger } = p;
  try {
    const archivedRecord =
      outcome.reason === "claim" && job.id ? await p.ctx.records.archiveReverted(job.id) : undefined;
    await job.moveToDelayed(outcome.untilMs, token);
    if (outcome.reason === "claim") {
      logClaimParked(p, code, outcome, archivedRecord);
    }
    logOutcome(logger, "delayed", { ...p, code, error: errorMessage(p.err), retryAtMs: outcome.untilMs });
    return new DelayedError();
  } catch (moveErr) {
    logger.warn("could not park the job; it is retried with backoff", {
      at: outcome.reason === "claim" ? "submitter.claim" : "submitter.job",
      reason: outcome.reason,
      error: errorMessage(moveErr),
    });
    return undefined;
  }
}

function logClaimParked(
  p: FailedRun,
  code: string,
  outcome: Extract<Outcome, { reason: "claim" }>,
  archivedRecord: unknown,
): void {
  const { txData } = p.job.data as FulfillSenderJobData;
  const level = outcome.logLevel;
  p.logger[level === "alert" ? "error" : level](
    "the router's claim failed: parked, retried until the sending side expires",
    {
      at: "submitter.claim",
      ...(level === "alert" ? { alert: true } : {}),
      code,
      error: errorMessage(p.err),
      transactionId: txData.transactionId,
      expiry: txData.expiry,
      secondsToExpiry: outcome.secondsToExpiry,
      runs: p.job.attemptsStarted,
      retryAtMs: outcome.untilMs,
      archivedRecord,
    },
  );
}

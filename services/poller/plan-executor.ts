import type { Job } from "bullmq";
import { errorMessage } from "../../shared/errors";
import { claimFailureIsTerminal } from "../../shared/protocol/claim-retry";
import { TX_JOB, txJobId, txJobOptions, type TxJobData } from "../../shared/queues";
import type { PollerContext } from "./context";
import type { JobPlan, Plan } from "./plan-action";

export interface PlanMeta {
  readonly transferKey: string;
  /** The source the records came from this tick, for the outcome line. */
  readonly source: string;
}

export type EnqueueOutcome = "added" | "exists" | "retried" | "failed" | "guarded";

/** Carries out one plan: enqueue (at most once per job id), or log an alert once. Returns what happened. */
export async function executePlan(ctx: PollerContext, plan: Plan, meta: PlanMeta): Promise<EnqueueOutcome | undefined> {
  const fields = { at: "poller.decide", transferKey: meta.transferKey, chainId: ctx.chainId };
  switch (plan.kind) {
    case "enqueue":
      if (plan.guard && (await prepareJobBlocksCancel(ctx, plan.guard, meta))) {
        return "guarded";
      }
      return enqueueOnce(ctx, plan.job, meta);
    case "wait":
    case "done":
      if (
        plan.alert &&
        (await ctx.alertOnce(
          `${plan.kind === "wait" ? `wait-${plan.state}-${plan.reason}` : "done-anomalous"}-${meta.transferKey}`,
        ))
      ) {
        // decideAction flags states where the router's funds are at risk or lost; an operator must look.
        ctx.logger.error("transfer needs an operator: funds at risk", { ...fields, plan });
      } else {
        ctx.logger.trace("nothing to do yet", { ...fields, plan });
      }
      return undefined;
    case "refused":
      if (await ctx.alertOnce(`refused-${meta.transferKey}`)) {
        ctx.logger.warn("sending-side prepare refused and not cancellable by us; skipped", {
          ...fields,
          reason: plan.reason,
          detail: plan.detail,
        });
      }
      return undefined;
    case "skip":
      ctx.logger.trace("owned by another poller", { ...fields, reason: plan.reason });
      return undefined;
  }
}

/**
 * Adds the job under its deterministic id unless a job with that id exists in any state. A failed job is
 * retried when its attempts ran out on retriable errors (with fresh attempts, so BullMQ's backoff applies
 * again instead of one attempt per block); a job failed as unrecoverable stays failed and is alerted once.
 * Except the router's claim (fulfill-sender): it is the router's income, so a failed one is retried whatever
 * ended it (a stall, a failed park) unless its reason is terminal (claim-retry.ts); the plan asks for it only
 * while the sending side is prepared and claimable.
 */
export async function enqueueOnce(ctx: PollerContext, job: JobPlan, meta: PlanMeta): Promise<EnqueueOutcome> {
  const jobId = txJobId(job.name, meta.transferKey);
  const queue = ctx.queueFor(job.chainId);
  const fields = { transferKey: meta.transferKey, action: job.name, chain: job.chainId, jobId, source: meta.source };
  // The state first, in one round trip: every tick asks this of every open transfer whose job already exists,
  // and only a missing or failed job needs the job itself (getJob, then getState, was two round trips each).
  const state = await queue.getJobState(jobId);
  if (state !== "failed" && state !== "unknown") {
    return "exists";
  }
  const existing = await queue.getJob(jobId);
  if (existing === undefined) {
    // A concurrent add of the same id (another instance) is a no-op in BullMQ: the id is the lock.
    await queue.add(job.name, job.data as TxJobData, txJobOptions(job.name, jobId));
    ctx.logger.info("job enqueued", { at: "poller.enqueue", ...fields, reason: reasonOf(job) });
    return "added";
  }
  if (state !== "failed") {
    return "exists"; // stored but in no state list (between two of BullMQ's steps): it exists, as before
  }
  const claimToRetry = job.name === TX_JOB.fulfillSender && !claimFailureIsTerminal(existing.failedReason);
  if (claimToRetry || exhaustedByRetriableErrors(existing)) {
    try {
      await existing.retry("failed", { resetAttemptsMade: true });
    } catch (err) {
      // Someone else retried or removed it in between; the next tick sees the new state.
      ctx.logger.debug("failed job could not be retried", { at: "poller.retry", ...fields, error: errorMessage(err) });
      return "exists";
    }
    ctx.logger.warn("failed job retried: its attempts ran out and the transfer still needs it", {
      at: "poller.retry",
      ...fields,
      attemptsMade: existing.attemptsMade,
      failedReason: existing.failedReason,
    });
    return "retried";
  }
  if (await ctx.alertOnce(`job-${jobId}`)) {
    ctx.logger.error("job failed as unrecoverable and is not retried; the transfer needs an operator", {
      at: "poller.job-failed",
      ...fields,
      failedReason: existing.failedReason,
    });
  }
  return "failed";
}

/**
 * BullMQ stores no "unrecoverable" flag: a job failed by UnrecoverableError stops before its attempts run out,
 * except on its last attempt, which the error name at the top of the last stack trace tells apart.
 */
export function exhaustedByRetriableErrors(job: Pick<Job, "attemptsMade" | "opts" | "stacktrace">): boolean {
  const lastTrace = job.stacktrace?.[job.stacktrace.length - 1] ?? "";
  return job.attemptsMade >= (job.opts.attempts ?? 1) && !lastTrace.startsWith("UnrecoverableError");
}

/**
 * The guard of a cancel caused by a failed verification (a check that can flip with time, e.g. the receiving
 * expiry window): once a prepare-receiver job exists in any state, the receiving side may exist or be on its
 * way (even a failed job's transaction can still be in a mempool), so the sending side is not refunded. Such a
 * transfer is cancelled at the sender's expiry instead, when a receiving prepare can no longer be valid.
 */
async function prepareJobBlocksCancel(
  ctx: PollerContext,
  guard: NonNullable<Extract<Plan, { kind: "enqueue" }>["guard"]>,
  meta: PlanMeta,
): Promise<boolean> {
  const prepareJob = await ctx
    .queueFor(guard.receivingChainId)
    .getJob(txJobId(TX_JOB.prepareReceiver, meta.transferKey));
  if (prepareJob === undefined) {
    return false;
  }
  if (await ctx.alertOnce(`cancel-guarded-${meta.transferKey}`)) {
    ctx.logger.warn("sending side fails verification but a receiving prepare was attempted; not cancelling it", {
      at: "poller.decide",
      transferKey: meta.transferKey,
      prepareJobId: prepareJob.id,
      prepareJobState: await prepareJob.getState(),
    });
  }
  return true;
}

function reasonOf(job: JobPlan): string | undefined {
  return "reason" in job.data ? job.data.reason : undefined;
}

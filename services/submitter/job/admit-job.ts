import { TX_JOB, ownTxJobId, validateTxJobData, type TxJobData, type TxJobName } from "../../../shared/queues";
import type { SubmitterContext } from "../context";
import { InvalidTxJobError, JobStalledError } from "../send/errors";
import type { TxJob } from "./tx-job";

/**
 * Whether the job may run at all, checked before anything is read on chain or sent; returns its id.
 * 1. its data passes the job's schema;
 * 2. it is on its own chain's queue;
 * 3. it has an id (the send record is kept under it);
 * 4. a job only the router's producers enqueue has the id they give it (assertOwnJobId);
 * 5. past the stall limit, it has a transaction that may be on chain (assertStallLimit).
 */
export async function admitJob(ctx: SubmitterContext, job: TxJob): Promise<string> {
  const problems = validateTxJobData(job.name, job.data);
  if (problems.length > 0) {
    throw new InvalidTxJobError(`invalid job data: ${problems.join("; ")}`, { problems });
  }
  if (job.data.chainId !== ctx.chainId) {
    throw new InvalidTxJobError(`job for chain ${job.data.chainId} on the queue of chain ${ctx.chainId}`, {
      jobChainId: job.data.chainId,
    });
  }
  if (!job.id) {
    throw new InvalidTxJobError("job has no id");
  }
  assertOwnJobId(job.name, job.data, job.id);
  await assertStallLimit(ctx, job, job.id);
  return job.id;
}

/**
 * Jobs that move the router's money without a counterpart the contract checks: a withdrawal (paid to whoever the
 * data names), a deposit (credited to whichever router the data names) and a refund (force skips the
 * receiving-side check). Only the router's own producers enqueue them,
 * always under their deterministic id (jobs.ts ownTxJobId); one under another id (a dashboard "add job") skipped
 * the admin API's balance check, duplicate window and audit line, and is refused before anything is read or sent.
 */
const OWN_ID_JOBS: ReadonlySet<string> = new Set([TX_JOB.removeLiquidity, TX_JOB.addLiquidityFor, TX_JOB.cancelSender]);

function assertOwnJobId(name: string, data: TxJobData, jobId: string): void {
  if (!OWN_ID_JOBS.has(name)) {
    return;
  }
  const expected = ownTxJobId(name as TxJobName, data);
  if (jobId !== expected) {
    throw new InvalidTxJobError(`a ${name} job under id ${JSON.stringify(jobId)} was not enqueued by the router`, {
      expectedJobId: expected,
    });
  }
}

/**
 * BullMQ's stall limit, applied here because only the record knows what a job did: past it, a job with nothing
 * on chain fails (it kills every process it runs in), a job with a transaction record keeps running, since its
 * transaction may be mined and the job must then complete, not be reported failed.
 */
async function assertStallLimit(ctx: SubmitterContext, job: TxJob, jobId: string): Promise<void> {
  const limit = ctx.maxStalledCount;
  if (limit === undefined || job.stalledCounter <= limit) {
    return;
  }
  const record = await ctx.records.load(jobId);
  if (!record || record.status === "reverted") {
    throw new JobStalledError(`job stalled ${job.stalledCounter} times (limit ${limit}) and has nothing on chain`, {
      stalled: job.stalledCounter,
      limit,
    });
  }
  ctx.logger.warn("job stalled past the limit, but it has a transaction: it keeps running from its record", {
    at: "submitter.job",
    stalled: job.stalledCounter,
    limit,
    recordStatus: record.status,
  });
}

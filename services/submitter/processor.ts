import { errorMessage } from "../../shared/errors";
import { TX_JOB, type TxJobResult } from "../../shared/queues";
import type { SubmitterContext } from "./context";
import { admitJob } from "./job/admit-job";
import { toBullMqError } from "./job/apply-outcome";
import { buildJobCall } from "./job/build-job-call";
import { logOutcome } from "./job/log-outcome";
import { sendJobOf } from "./job/send-job-of";
import type { TxJob } from "./job/tx-job";
import type { SendTrace } from "./send/send-context";
import { runThroughLapses } from "./lease/run-through-lapse";
import { sendJobTransaction } from "./send/send-transaction";

export type TxProcessor = (job: TxJob, token?: string) => Promise<TxJobResult>;

/**
 * The BullMQ boundary, wiring only: job → admitted (job/admit-job.ts) → its call built by its operation
 * (job/build-job-call.ts) → the send pipeline (send/send-transaction.ts); an error → the policy's outcome applied
 * (job/apply-outcome.ts: hand back, park, retry, fail, refund). An operation finding its effect already on chain
 * completes the job as a no-op. Exactly one outcome line is logged per attempt (job/log-outcome.ts).
 */
export function createTxProcessor(ctx: SubmitterContext): TxProcessor {
  return async (job, token) => {
    const startedAtMs = Date.now();
    const trace: SendTrace = {};
    // Before the job's first write: its broadcasts wait until replicas hold what it wrote on this connection.
    const replication = ctx.replication;
    const since = replication?.mark() ?? 0;
    const replicated = replication ? () => replication.ensure(since) : undefined;
    // The admin API's request id (job data of remove-liquidity, cancel-sender, relay-fulfill) on every line of the job.
    const requestId = (job.data as { requestId?: unknown }).requestId;
    const logger = ctx.logger.child({
      jobId: job.id,
      name: job.name,
      ...(typeof requestId === "string" ? { requestId } : {}),
    });
    const liquidity = job.id && HOLDING_JOBS.has(job.name) ? ctx.liquidityHolds?.forJob(job.id) : undefined;
    try {
      const jobCtx: SubmitterContext = { ...ctx, logger, liquidity, replicated };
      const result = await runThroughLapses(jobCtx, () => runJob(jobCtx, job, trace));
      logOutcome(logger, "completed", { ctx, trace, startedAtMs, noop: result.noop });
      return result;
    } catch (err) {
      throw await toBullMqError({ err, job, token, logger, ctx, trace, startedAtMs });
    } finally {
      // Dropped unless the job's transaction may still be mined: then it holds across runs and takeovers.
      await liquidity?.settle().catch((err: unknown) => {
        logger.warn("could not settle the job's liquidity hold; a later check or takeover drops it", {
          at: "submitter.liquidity",
          error: errorMessage(err),
        });
      });
    }
  };
}

/** Jobs whose transaction takes the router's unlocked liquidity: they hold it until mined (liquidity-in-flight.ts). */
const HOLDING_JOBS: ReadonlySet<string> = new Set([TX_JOB.prepareReceiver, TX_JOB.removeLiquidity]);

async function runJob(ctx: SubmitterContext, job: TxJob, trace: SendTrace): Promise<TxJobResult> {
  const jobId = await admitJob(ctx, job);
  return sendJobTransaction(ctx, sendJobOf(ctx, job, jobId, trace), () => buildJobCall(ctx, job, jobId));
}

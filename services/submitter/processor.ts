import { createHash } from "node:crypto";
import { UnrecoverableError, WaitingError, type Job } from "bullmq";
import { errorCode, errorMessage, isRetriable } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import {
  TX_JOB,
  validateTxJobData,
  type RemoveLiquidityJobData,
  type TxJobData,
  type TxJobProgress,
  type TxJobResult,
} from "../../shared/queues";
import type { SubmitterContext } from "./context";
import { prepareRemoveLiquidity } from "./operations/remove-liquidity";
import { InvalidTxJobError, SubmitterShutdownError } from "./send/errors";
import type { SendTrace } from "./send/send-context";
import { sendJobTransaction } from "./send/send-transaction";
import type { TxCall } from "./send/tx-record";

export type TxJob = Job<TxJobData, TxJobResult, string>;
export type TxProcessor = (job: TxJob, token?: string) => Promise<TxJobResult>;

type Outcome = "completed" | "retry" | "failed" | "handover";

/**
 * The BullMQ boundary: job → validated data → operation → send pipeline, and an error → BullMQ's decision.
 * Retriable errors are rethrown (attempts + backoff apply); terminal ones become UnrecoverableError with the
 * cause's code first in the message; a shutdown hands the job back to the queue without using an attempt.
 * Exactly one outcome line is logged per attempt.
 */
export function createTxProcessor(ctx: SubmitterContext): TxProcessor {
  return async (job, token) => {
    const startedAtMs = Date.now();
    const trace: SendTrace = {};
    const logger = ctx.logger.child({ jobId: job.id, name: job.name });
    try {
      const result = await runJob({ ...ctx, logger }, job, trace);
      logOutcome(logger, "completed", { ctx, trace, startedAtMs });
      return result;
    } catch (err) {
      throw await toBullMqError({ err, job, token, logger, ctx, trace, startedAtMs });
    }
  };
}

async function runJob(ctx: SubmitterContext, job: TxJob, trace: SendTrace): Promise<TxJobResult> {
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
  return sendJobTransaction(
    ctx,
    {
      jobId: job.id,
      jobName: job.name,
      dataHash: hashJobData(job.name, job.data),
      reportBroadcast: async (transactionHash, nonce) => {
        const progress: TxJobProgress = { stage: "broadcast", transactionHash, nonce };
        await job.updateProgress(progress);
      },
      trace,
    },
    () => prepareCall(ctx, job.name, job.data),
  );
}

function prepareCall(ctx: SubmitterContext, name: string, data: TxJobData): Promise<TxCall> {
  switch (name) {
    case TX_JOB.removeLiquidity:
      return prepareRemoveLiquidity(ctx, data as RemoveLiquidityJobData);
    default:
      throw new InvalidTxJobError(`no operation for job name ${JSON.stringify(name)}`);
  }
}

/** sha256 over the name and the data with sorted keys: the same request always hashes the same. */
export function hashJobData(name: string, data: unknown): string {
  const sorted = (value: unknown): unknown =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, sorted(v)]))
      : value;
  return createHash("sha256").update(JSON.stringify({ name, data: sorted(data) })).digest("hex");
}

interface FailureParams {
  err: unknown;
  job: TxJob;
  token?: string;
  logger: Logger;
  ctx: SubmitterContext;
  trace: SendTrace;
  startedAtMs: number;
}

async function toBullMqError(p: FailureParams): Promise<Error> {
  const { err, job, logger } = p;
  const code = errorCode(err);
  if (err instanceof SubmitterShutdownError && p.token) {
    try {
      // Back to the head of the queue for the next instance; a handover is not a failed attempt.
      await job.moveToWait(p.token);
      logOutcome(logger, "handover", { ...p, code });
      return new WaitingError();
    } catch (moveErr) {
      logger.warn("could not hand the job back; it will be retried", { at: "submitter.job", error: errorMessage(moveErr) });
    }
  }
  if (isRetriable(err)) {
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    logOutcome(logger, lastAttempt ? "failed" : "retry", { ...p, code, error: errorMessage(err) });
    return err instanceof Error ? err : new Error(errorMessage(err));
  }
  logOutcome(logger, "failed", { ...p, code, error: errorMessage(err) });
  return new UnrecoverableError(`${code}: ${errorMessage(err)}`);
}

function logOutcome(
  logger: Logger,
  outcome: Outcome,
  p: { ctx: SubmitterContext; trace: SendTrace; startedAtMs: number; code?: string; error?: string },
): void {
  const fields = {
    at: "submitter.job",
    chainId: p.ctx.chainId,
    outcome,
    transactionHash: p.trace.transactionHash,
    nonce: p.trace.nonce,
    bumps: p.trace.bumps,
    code: p.code,
    error: p.error,
    durationMs: Date.now() - p.startedAtMs,
  };
  const level = outcome === "failed" ? "error" : outcome === "retry" ? "warn" : "info";
  logger[level]("job outcome", fields);
}

import { createHash } from "node:crypto";
import { DelayedError, UnrecoverableError, WaitingError, type Job } from "bullmq";
import { errorCode, errorMessage } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import {
  TX_JOB,
  txJobOptions,
  transferKey,
  txJobId,
  ownTxJobId,
  transferExpiryOf,
  validateTxJobData,
  type AddLiquidityForJobData,
  type CancelReceiverJobData,
  type CancelSenderJobData,
  type FulfillSenderJobData,
  type PrepareReceiverJobData,
  type RelayFulfillJobData,
  type RemoveLiquidityJobData,
  type TxJobData,
  type TxJobName,
  type TxJobProgress,
  type TxJobResult,
} from "../../shared/queues";
import type { SubmitterContext } from "./context";
import { buildAddLiquidityForCall } from "./operations/add-liquidity-for";
import { buildCancelReceiverCall } from "./operations/cancel-receiver";
import { buildCancelSenderCall } from "./operations/cancel-sender";
import { buildFulfillSenderCall } from "./operations/fulfill-sender";
import { buildPrepareReceiverCall } from "./operations/prepare-receiver";
import { buildRelayFulfillCall } from "./operations/relay-fulfill";
import { buildRemoveLiquidityCall } from "./operations/remove-liquidity";
import { InvalidTxJobError, JobStalledError } from "./send/errors";
import { decideOutcome, recordStatusMatters, type Outcome, type OutcomeFacts } from "./outcome-policy";
import type { LedgerEntry, SendTrace } from "./send/send-context";
import { sendJobTransaction } from "./send/send-transaction";
import type { TxCall, TxNoop } from "./send/tx-record";

export type TxJob = Job<TxJobData, TxJobResult, string>;
export type TxProcessor = (job: TxJob, token?: string) => Promise<TxJobResult>;

/** The job's outcome as its log line names it. */
type LoggedOutcome = "completed" | "retry" | "failed" | "handover" | "delayed";

/**
 * The BullMQ boundary: job → validated data → operation → send pipeline; an error → the policy's outcome
 * (outcome-policy.ts, decideOutcome) → BullMQ's decision: a handover (moveToWait), a park in the delayed set
 * (park: no attempt used), a retry (the error rethrown: attempts + backoff apply) or a failure
 * (UnrecoverableError with the cause's code first in the message), with the sender's refund enqueued when the
 * policy says so (enqueueSenderRefund). An operation finding its effect already on chain completes the job as a
 * no-op. Exactly one outcome line is logged per attempt.
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
      const result = await runJob({ ...ctx, logger, liquidity, replicated }, job, trace);
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

/**
 * Jobs whose call the contract refuses to execute twice (#P:015, #F:019, #C:019): a rebuild at a new nonce
 * after a nonce reported taken cannot act twice. Any other job (remove-liquidity) rebuilds only once the
 * nonce is proven taken (send/confirm-nonce-taken.ts).
 */
const REPLAY_PROTECTED_JOBS: ReadonlySet<string> = new Set([
  TX_JOB.prepareReceiver,
  TX_JOB.fulfillSender,
  TX_JOB.cancelSender,
  TX_JOB.cancelReceiver,
]);

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
  assertOwnJobId(job.name, job.data, job.id);
  await assertStallLimit(ctx, job, job.id);
  const jobId = job.id;
  return sendJobTransaction(
    ctx,
    {
      jobId: job.id,
      jobName: job.name,
      dataHash: hashJobData(job.name, job.data),
      transferExpirySec: transferExpiryOf(job.data),
      reportBroadcast: async (transactionHash, nonce) => {
        const progress: TxJobProgress = { stage: "broadcast", transactionHash, nonce };
        await job.updateProgress(progress);
      },
      trace,
      replayProtected: REPLAY_PROTECTED_JOBS.has(job.name),
      ledgerEntry: ledgerEntryOf(job.name, job.data),
      onMined: async (receipt) => {
        trace.minedOk = receipt.status === 1;
        // Best effort: an unmarked hold only over-counts until the run settles it from the confirmed record.
        await ctx.liquidity?.markMined(receipt.blockNumber).catch((err: unknown) => {
          ctx.logger.warn("could not mark the liquidity hold mined", {
            at: "submitter.liquidity",
            error: errorMessage(err),
          });
        });
      },
      onRebuild: async () => ctx.liquidity?.unmarkMined(),
    },
    () => prepareCall(ctx, job, jobId),
  );
}

/** Why each job's signer sends: the `kind` its mined transaction is booked as (shared/queues/ledger-jobs.ts). */
const LEDGER_KIND_OF: Readonly<Record<TxJobName, LedgerEntry["kind"]>> = {
  [TX_JOB.prepareReceiver]: "prepare",
  [TX_JOB.fulfillSender]: "fulfill",
  [TX_JOB.cancelSender]: "cancel",
  [TX_JOB.cancelReceiver]: "cancel",
  [TX_JOB.relayFulfill]: "relay",
  [TX_JOB.removeLiquidity]: "remove-liquidity",
  [TX_JOB.addLiquidityFor]: "add-liquidity",
};

/** The job's ledger entry: its kind, the swap it acts on (a lifecycle job), the admin request (an operation). */
export function ledgerEntryOf(name: string, data: TxJobData): LedgerEntry | undefined {
  const kind = LEDGER_KIND_OF[name as TxJobName];
  if (kind === undefined) {
    return undefined;
  }
  const d = data as { txData?: { transactionId?: string }; sender?: { txData?: { transactionId?: string } } };
  const transactionId = d.txData?.transactionId ?? d.sender?.txData?.transactionId;
  const requestId = (data as { requestId?: unknown }).requestId;
  return {
    kind,
    ...(transactionId !== undefined ? { transactionId: transactionId.toLowerCase() } : {}),
    ...(typeof requestId === "string" ? { requestId } : {}),
  };
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

function prepareCall(ctx: SubmitterContext, job: TxJob, jobId: string): Promise<TxCall | TxNoop> {
  const { name, data } = job;
  switch (name) {
    case TX_JOB.removeLiquidity:
      return buildRemoveLiquidityCall(ctx, data as RemoveLiquidityJobData, job.timestamp);
    case TX_JOB.prepareReceiver:
      return buildPrepareReceiverCall(ctx, data as PrepareReceiverJobData);
    case TX_JOB.fulfillSender:
      return buildFulfillSenderCall(ctx, data as FulfillSenderJobData);
    case TX_JOB.cancelSender:
      return buildCancelSenderCall(ctx, data as CancelSenderJobData);
    case TX_JOB.cancelReceiver:
      return buildCancelReceiverCall(ctx, data as CancelReceiverJobData);
    case TX_JOB.relayFulfill:
      return buildRelayFulfillCall(ctx, data as RelayFulfillJobData);
    case TX_JOB.addLiquidityFor:
      return buildAddLiquidityForCall(ctx, jobId, data as AddLiquidityForJobData);
    default:
      throw new InvalidTxJobError(`no operation for job name ${JSON.stringify(name)}`);
  }
}

/** sha256 over the name and the data with sorted keys: the same request always hashes the same. */
export function hashJobData(name: string, data: unknown): string {
  const sorted = (value: unknown): unknown =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(
          Object.entries(value)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([k, v]) => [k, sorted(v)]),
        )
      : value;
  return createHash("sha256")
    .update(JSON.stringify({ name, data: sorted(data) }))
    .digest("hex");
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

/**
 * The error → BullMQ's decision: the policy (outcome-policy.ts) decides from the error and the run's facts, and
 * this applies it. A move BullMQ refuses (the lock is gone) is decided again without moving: retry or fail.
 */
async function toBullMqError(p: FailureParams): Promise<Error> {
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
async function outcomeFacts(p: FailureParams): Promise<OutcomeFacts> {
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

/** Hands the job back, or parks it (park); undefined when BullMQ refuses the move. */
async function applyMove(
  p: FailureParams,
  token: string,
  code: string,
  outcome: Extract<Outcome, { kind: "hand-over" | "park" }>,
): Promise<Error | undefined> {
  if (outcome.kind === "park") {
    return park(p, token, code, outcome);
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

/**
 * The one job-parking step: the job waits in the delayed set until `untilMs` without using an attempt. A claim's
 * reverted record is archived first and the claim's failure logged at warn, error, then alert level as the
 * sending side's expiry nears. Undefined when the job cannot be parked (BullMQ's retry rules then apply).
 */
async function park(
  p: FailureParams,
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
  p: FailureParams,
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

/**
 * The one place a refused receiving prepare turns into a refund (docs/protocol.md#transfer-actions): a cancel-sender
 * job on the sending chain's queue under the transfer's deterministic id, so it is enqueued at most once.
 * Safe by construction: that job re-checks every sender-cancel rule on chain before it sends. A failure to
 * enqueue is logged, not thrown: the transfer still ends in a refund at the sender's expiry.
 */
async function enqueueSenderRefund(
  ctx: SubmitterContext,
  data: PrepareReceiverJobData,
  code: string,
  logger: Logger,
): Promise<void> {
  const { txData } = data.sender;
  const refundJobId = txJobId(TX_JOB.cancelSender, transferKey(txData.transactionId, txData.user));
  const fields = {
    at: "submitter.refund",
    refundJobId,
    sendingChainId: txData.sendingChainId,
    transactionId: txData.transactionId,
    code,
  };
  const queue = ctx.txQueue(txData.sendingChainId);
  if (!queue) {
    logger.error("cannot enqueue the sender cancel: the sending chain has no queue in this config", fields);
    return;
  }
  const refund: CancelSenderJobData = {
    chainId: txData.sendingChainId,
    txData,
    reason: code,
    force: false,
    afterOwnRefusal: true,
  };
  try {
    // An existing job under this id (any state) is kept as it is: BullMQ ignores the add.
    await queue.add(TX_JOB.cancelSender, refund, txJobOptions(TX_JOB.cancelSender, refundJobId));
    logger.info("receiving prepare refused with a cancellable reason: sender cancel enqueued", fields);
  } catch (enqueueErr) {
    logger.error("could not enqueue the sender cancel", { ...fields, error: errorMessage(enqueueErr) });
  }
}

function logOutcome(
  logger: Logger,
  outcome: LoggedOutcome,
  p: {
    ctx: SubmitterContext;
    trace: SendTrace;
    startedAtMs: number;
    code?: string;
    error?: string;
    noop?: boolean;
    retryAtMs?: number;
  },
): void {
  const fields = {
    at: "submitter.job",
    chainId: p.ctx.chainId,
    outcome,
    transactionHash: p.trace.transactionHash,
    nonce: p.trace.nonce,
    bumps: p.trace.bumps,
    noop: p.noop,
    retryAtMs: p.retryAtMs,
    code: p.code,
    error: p.error,
    durationMs: Date.now() - p.startedAtMs,
  };
  const level = outcome === "failed" ? "error" : outcome === "retry" ? "warn" : "info";
  logger[level]("job outcome", fields);
}

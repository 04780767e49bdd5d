import { createHash } from "node:crypto";
import { DelayedError, UnrecoverableError, WaitingError, type Job } from "bullmq";
import { RouterError, errorCode, errorMessage, isRetriable } from "../../shared/errors";
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
import { claimKeepsTrying, claimLogLevel, claimRetryAtMs } from "../../shared/protocol/claim-retry";
import type { SubmitterContext } from "./context";
import { buildAddLiquidityForCall } from "./operations/add-liquidity-for";
import { buildCancelReceiverCall } from "./operations/cancel-receiver";
import { buildCancelSenderCall } from "./operations/cancel-sender";
import { isCancellable } from "./operations/errors";
import { buildFulfillSenderCall } from "./operations/fulfill-sender";
import { buildPrepareReceiverCall } from "./operations/prepare-receiver";
import { buildRelayFulfillCall } from "./operations/relay-fulfill";
import { buildRemoveLiquidityCall } from "./operations/remove-liquidity";
import { ReplicaAckTimeoutError } from "../../shared/coordination/replication";
import { TransactionRevertedError } from "../../shared/chain/errors";
import {
  InvalidTxJobError,
  JobStalledError,
  LedgerNamingError,
  SenderLeaseLostError,
  SubmitterShutdownError,
} from "./send/errors";
import type { LedgerEntry, SendTrace } from "./send/send-context";
import { sendJobTransaction } from "./send/send-transaction";
import type { TxCall, TxNoop } from "./send/tx-record";

export type TxJob = Job<TxJobData, TxJobResult, string>;
export type TxProcessor = (job: TxJob, token?: string) => Promise<TxJobResult>;

type Outcome = "completed" | "retry" | "failed" | "handover" | "delayed";

/**
 * The BullMQ boundary: job → validated data → operation → send pipeline, and an error → BullMQ's decision.
 * Retriable errors are rethrown (attempts + backoff apply); terminal ones become UnrecoverableError with the
 * cause's code first in the message; a shutdown hands the job back to the queue without using an attempt;
 * a "not yet" error (NOT_YET_CODES: an expiry, the 780 s rule, holds in flight, a taken nonce not yet proven) parks the job in the delayed set until
 * then, also without using an attempt. A receiving prepare refused for a cancellable reason enqueues the
 * sender's refund (enqueueSenderRefund). An operation finding its effect already on chain completes the job
 * as a no-op. A failed claim (fulfill-sender) is parked and run again until the sending side's expiry
 * (parkClaim). Exactly one outcome line is logged per attempt.
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

async function toBullMqError(p: FailureParams): Promise<Error> {
  const { err, job, logger } = p;
  const code = errorCode(err);
  if ((err instanceof SubmitterShutdownError || err instanceof SenderLeaseLostError) && p.token) {
    try {
      // Back to the head of the queue for the lease holder; a handover is not a failed attempt. After a lost
      // lease the new holder usually took the job already (this move then fails: nothing more to do here).
      await job.moveToWait(p.token);
      logOutcome(logger, "handover", { ...p, code });
      return new WaitingError();
    } catch (moveErr) {
      logger.warn("could not hand the job back; it will be retried", {
        at: "submitter.job",
        error: errorMessage(moveErr),
      });
    }
  }
  if (err instanceof LedgerNamingError && p.token) {
    // Before the claim's parking below, which archives a reverted record: its revert must be named first.
    const parked = await parkNotYet(p, p.token, code, Number(err.context.retryAtMs));
    if (parked) {
      return parked;
    }
  }
  if (err instanceof ReplicaAckTimeoutError && p.token) {
    try {
      // Replicas did not acknowledge the writes in time: nothing was broadcast. Parked briefly without using an
      // attempt, so a replica outage longer than the backoff never fails the job; the next run resumes from
      // what Redis holds and waits again.
      const retryAtMs = Date.now() + REPLICA_RETRY_MS;
      await job.moveToDelayed(retryAtMs, p.token);
      logOutcome(logger, "delayed", { ...p, code, error: errorMessage(err), retryAtMs });
      return new DelayedError();
    } catch (moveErr) {
      logger.warn("could not park the job; it is retried with backoff", {
        at: "submitter.job",
        error: errorMessage(moveErr),
      });
    }
  }
  if (job.name === TX_JOB.fulfillSender && p.token && claimKeepsTrying(err)) {
    const parked = await parkClaim(p, p.token, code);
    if (parked) {
      return parked;
    }
  }
  if (p.token && !(err instanceof TransactionRevertedError) && (await minedOnChain(p))) {
    try {
      // Its transaction is mined: the job is never reported failed; it runs again, resumes from its record and
      // completes (with the stored result once confirmed). No attempt is used.
      const retryAtMs = Date.now() + MINED_RETRY_MS;
      await job.moveToDelayed(retryAtMs, p.token);
      logOutcome(logger, "delayed", { ...p, code, error: errorMessage(err), retryAtMs });
      return new DelayedError();
    } catch (moveErr) {
      // The lock is gone: another run owns the job now, and this run's failure cannot be recorded either.
      logger.warn("could not park the mined job", { at: "submitter.job", error: errorMessage(moveErr) });
    }
  }
  const notYetUntilMs = notYetRetryAtMs(err);
  if (notYetUntilMs !== undefined && p.token) {
    // "Not yet" (a time rule): park the job until then without using an attempt; nothing was sent.
    const parked = await parkNotYet(p, p.token, code, notYetUntilMs);
    if (parked) {
      return parked;
    }
  }
  if (isRetriable(err)) {
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    logOutcome(logger, lastAttempt ? "failed" : "retry", { ...p, code, error: errorMessage(err) });
    return err instanceof Error ? err : new Error(errorMessage(err));
  }
  logOutcome(logger, "failed", { ...p, code, error: errorMessage(err) });
  if (job.name === TX_JOB.prepareReceiver && isCancellable(err)) {
    await enqueueSenderRefund(p.ctx, job.data as PrepareReceiverJobData, code, logger);
  }
  return new UnrecoverableError(`${code}: ${errorMessage(err)}`);
}

/** Parks the job until `retryAtMs` without using an attempt; undefined when it cannot be parked (retry rules apply). */
async function parkNotYet(
  p: FailureParams,
  token: string,
  code: string,
  retryAtMs: number,
): Promise<Error | undefined> {
  try {
    await p.job.moveToDelayed(retryAtMs, token);
    logOutcome(p.logger, "delayed", { ...p, code, error: errorMessage(p.err), retryAtMs });
    return new DelayedError();
  } catch (moveErr) {
    p.logger.warn("could not park the job; it is retried with backoff", {
      at: "submitter.job",
      error: errorMessage(moveErr),
    });
    return undefined;
  }
}

/** A job stopped because replicas did not acknowledge its writes (REDIS_NOT_REPLICATED) runs again this soon. */
export const REPLICA_RETRY_MS = 1_000;

/**
 * Refusals that only time can lift, each carrying the wall-clock `retryAtMs` it passes at: the job waits in
 * the delayed set until then instead of spending attempts (the decision is here, not in the error classes).
 */
const NOT_YET_CODES: ReadonlySet<string> = new Set([
  "SENDER_TOO_NEW",
  "RECEIVER_UNVERIFIABLE",
  "RECEIVER_NOT_EXPIRED",
  "LIQUIDITY_IN_FLIGHT",
  // Not time but the providers' receipts: a transaction that may be mined never spends the job's attempts.
  "NONCE_TAKEN_UNCONFIRMED",
  "WITHDRAWAL_UNSETTLED",
  "SENDER_REFUND_UNSETTLED",
]);

function notYetRetryAtMs(err: unknown): number | undefined {
  if (!(err instanceof RouterError) || !NOT_YET_CODES.has(err.code)) {
    return undefined;
  }
  const retryAtMs = err.context.retryAtMs;
  return typeof retryAtMs === "number" && Number.isFinite(retryAtMs) ? retryAtMs : undefined;
}

/** A job whose transaction is mined, stopped by an error, runs again this soon. */
const MINED_RETRY_MS = 1_000;

/**
 * This run saw the job's transaction mined successfully, or (for an error that is not the job's verdict, e.g. a
 * record conflict with a second run after a lock loss) its record says it is confirmed.
 */
async function minedOnChain(p: FailureParams): Promise<boolean> {
  if (p.trace.minedOk) {
    return true;
  }
  if (!isRetriable(p.err)) {
    return false;
  }
  const record = p.job.id ? await p.ctx.records.load(p.job.id).catch(() => undefined) : undefined;
  return record?.status === "confirmed";
}

/**
 * Chain clocks may trail the wall clock: a claim is still tried this long after the expiry by wall time, and the
 * operation itself (which reads the chain's time) decides when it is expired (SENDER_EXPIRED, terminal).
 */
const CLAIM_EXPIRY_SLACK_MS = 10 * 60_000;

/**
 * The router's claim failed for a reason a later run may not meet (claim-retry.ts): park the job with a
 * doubling delay, without using a BullMQ attempt, so it runs again until the sending side expires. A reverted
 * transaction's record is archived first, or the next run would only find it again. The failure is logged
 * at warn, error, then alert level as the expiry nears. Undefined when the job cannot be parked.
 */
async function parkClaim(p: FailureParams, token: string, code: string): Promise<Error | undefined> {
  const { job, logger, ctx } = p;
  const { txData } = job.data as FulfillSenderJobData;
  const nowMs = Date.now();
  const expiryMs = txData.expiry * 1000;
  if (nowMs >= expiryMs + CLAIM_EXPIRY_SLACK_MS) {
    return undefined;
  }
  try {
    const archivedRecord = job.id ? await ctx.records.archiveReverted(job.id) : undefined;
    const retryAtMs = claimRetryAtMs(nowMs, job.attemptsStarted, expiryMs + CLAIM_EXPIRY_SLACK_MS);
    await job.moveToDelayed(retryAtMs, token);
    const secondsToExpiry = Math.round((expiryMs - nowMs) / 1000);
    const level = claimLogLevel(secondsToExpiry);
    logger[level === "alert" ? "error" : level](
      "the router's claim failed: parked, retried until the sending side expires",
      {
        at: "submitter.claim",
        ...(level === "alert" ? { alert: true } : {}),
        code,
        error: errorMessage(p.err),
        transactionId: txData.transactionId,
        expiry: txData.expiry,
        secondsToExpiry,
        runs: job.attemptsStarted,
        retryAtMs,
        archivedRecord,
      },
    );
    logOutcome(logger, "delayed", { ...p, code, error: errorMessage(p.err), retryAtMs });
    return new DelayedError();
  } catch (parkErr) {
    logger.warn("could not park the claim; BullMQ's retry rules apply", {
      at: "submitter.claim",
      error: errorMessage(parkErr),
    });
    return undefined;
  }
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
  outcome: Outcome,
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

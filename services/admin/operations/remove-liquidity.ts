import type { Job, Queue, QueueEvents } from "bullmq";
import { errorMessage } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import {
  TX_JOB,
  TX_JOB_DEFAULTS,
  isTxJobProgress,
  txJobId,
  type RemoveLiquidityJobData,
} from "../../../shared/queues";
import type { OperationContext, RemoveLiquidityRequest, TransactionResponse } from "../types";
import {
  BalanceUnavailableError,
  BroadcastTimeoutError,
  InsufficientLiquidityError,
  QueueUnavailableError,
  RequestIdConflictError,
  TransactionFailedError,
} from "./errors";

export const DEFAULT_BROADCAST_TIMEOUT_MS = 30_000;
/** The producer connection fails fast once connected, but waits while it has never connected: bound it. */
const QUEUE_CALL_TIMEOUT_MS = 5_000;
const BALANCE_READ_TIMEOUT_MS = 10_000;
/** Backstop for a missed QueueEvents message (the event reader connects late or reconnects). */
const POLL_INTERVAL_MS = 1_000;

export interface RemoveLiquidityDeps {
  queueFor(chainId: number): Queue;
  queueEventsFor(chainId: number): QueueEvents;
  /** The router's unlocked liquidity in the TransactionManager, base units. */
  readUnlockedBalance(chainId: number, assetId: string): Promise<bigint>;
  /** How long a request waits for the submitter's broadcast; 30 s by default. */
  broadcastTimeoutMs?: number;
  logger: Logger;
}

export type RemoveLiquidityOperation = (
  params: RemoveLiquidityRequest,
  ctx: OperationContext,
) => Promise<TransactionResponse>;

/**
 * Checks the unlocked balance, enqueues one remove-liquidity job keyed by the request id, and answers with
 * the transaction hash as soon as the submitter reports the broadcast (never waiting for confirmations).
 * A retry with the same request id finds the same job and waits on it instead of enqueuing again.
 */
export function createRemoveLiquidityOperation(deps: RemoveLiquidityDeps): RemoveLiquidityOperation {
  const timeoutMs = deps.broadcastTimeoutMs ?? DEFAULT_BROADCAST_TIMEOUT_MS;
  return async (params, ctx) => {
    const jobId = txJobId(TX_JOB.removeLiquidity, ctx.requestId);
    const data: RemoveLiquidityJobData = { ...params, requestId: ctx.requestId };
    const queue = deps.queueFor(params.chainId);
    const logger = deps.logger.child({ requestId: ctx.requestId, jobId, chainId: params.chainId });

    const existing = await queueCall(() => queue.getJob(jobId));
    if (existing) {
      assertSameRequest(existing, data, jobId);
      logger.info("remove-liquidity retried: waiting on the existing job", { at: "admin.removeLiquidity" });
    } else {
      await assertUnlockedBalance(deps, params);
    }
    const transactionHash = await waitForBroadcast({
      queue,
      events: deps.queueEventsFor(params.chainId),
      jobId,
      timeoutMs,
      enqueue: existing
        ? undefined
        : () => queueCall(() => queue.add(TX_JOB.removeLiquidity, data, { ...TX_JOB_DEFAULTS, jobId })),
    });
    logger.info("remove-liquidity broadcast", {
      at: "admin.removeLiquidity",
      transactionHash,
      assetId: params.assetId,
      amount: params.amount,
      recipientAddress: params.recipientAddress,
    });
    return { transactionHash };
  };
}

async function assertUnlockedBalance(deps: RemoveLiquidityDeps, params: RemoveLiquidityRequest): Promise<void> {
  let unlocked: bigint;
  try {
    unlocked = await withTimeout(deps.readUnlockedBalance(params.chainId, params.assetId), BALANCE_READ_TIMEOUT_MS);
  } catch (err) {
    throw new BalanceUnavailableError(
      `could not read the router's unlocked balance on chain ${params.chainId}`,
      { chainId: params.chainId, assetId: params.assetId },
      { cause: err },
    );
  }
  const amount = BigInt(params.amount);
  if (unlocked < amount) {
    throw new InsufficientLiquidityError(
      `unlocked balance ${unlocked.toString()} is below the requested amount ${amount.toString()}`,
      { chainId: params.chainId, assetId: params.assetId, unlocked: unlocked.toString(), amount: amount.toString() },
    );
  }
}

function assertSameRequest(job: Job, data: RemoveLiquidityJobData, jobId: string): void {
  const existing = job.data as Partial<RemoveLiquidityJobData>;
  const same = (Object.keys(data) as Array<keyof RemoveLiquidityJobData>).every((key) => existing[key] === data[key]);
  if (!same) {
    throw new RequestIdConflictError(
      "this request id was already used for a different remove-liquidity request; use a new X-Request-Id",
      { jobId },
    );
  }
}

interface WaitForBroadcastParams {
  queue: Queue;
  events: QueueEvents;
  jobId: string;
  timeoutMs: number;
  /** Adds the job; runs only after the listeners are attached, so no event can slip by. */
  enqueue?: () => Promise<unknown>;
}

/** Resolves with the broadcast hash from the first of: progress event, completed event, or a job poll. */
async function waitForBroadcast(params: WaitForBroadcastParams): Promise<string> {
  const { queue, events, jobId, timeoutMs } = params;
  const outcome = createOutcome<string>();
  const onProgress = (args: { jobId: string; data: unknown }): void => {
    if (args.jobId === jobId && isTxJobProgress(args.data)) {
      outcome.resolve(args.data.transactionHash);
    }
  };
  const onCompleted = (args: { jobId: string; returnvalue: unknown }): void => {
    if (args.jobId === jobId) {
      settleCompleted(outcome, args.returnvalue, jobId);
    }
  };
  const onFailed = (args: { jobId: string; failedReason: string }): void => {
    if (args.jobId === jobId) {
      outcome.reject(failedError(args.failedReason, jobId));
    }
  };
  events.on("progress", onProgress);
  events.on("completed", onCompleted);
  events.on("failed", onFailed);
  const timer = setTimeout(() => {
    outcome.reject(
      new BroadcastTimeoutError(
        `no submitter broadcast the transaction within ${timeoutMs / 1000}s; the job is still queued`,
        { jobId },
      ),
    );
  }, timeoutMs);
  let poller: NodeJS.Timeout | undefined;
  try {
    if (params.enqueue) {
      await params.enqueue();
    }
    const poll = (): void => {
      void pollJob(queue, jobId, outcome).finally(() => {
        if (!outcome.settled()) {
          poller = setTimeout(poll, POLL_INTERVAL_MS);
        }
      });
    };
    poll();
    return await outcome.promise;
  } finally {
    clearTimeout(timer);
    clearTimeout(poller);
    events.off("progress", onProgress);
    events.off("completed", onCompleted);
    events.off("failed", onFailed);
  }
}

/** Reads the job's stored state; Redis errors are ignored here because the deadline still bounds the wait. */
async function pollJob(queue: Queue, jobId: string, outcome: Outcome<string>): Promise<void> {
  try {
    const job = await withTimeout(queue.getJob(jobId), QUEUE_CALL_TIMEOUT_MS);
    if (!job || outcome.settled()) {
      return;
    }
    if (isTxJobProgress(job.progress)) {
      outcome.resolve(job.progress.transactionHash);
    } else if (job.finishedOn !== undefined && job.returnvalue !== null && job.returnvalue !== undefined) {
      settleCompleted(outcome, job.returnvalue, jobId);
    } else if (job.finishedOn !== undefined && (await job.isFailed())) {
      outcome.reject(failedError(job.failedReason, jobId));
    }
  } catch {
    // Transient: the next poll or an event settles it, or the deadline answers 504.
  }
}

function settleCompleted(outcome: Outcome<string>, returnvalue: unknown, jobId: string): void {
  const hash = (returnvalue as { transactionHash?: unknown } | null)?.transactionHash;
  if (typeof hash === "string") {
    outcome.resolve(hash);
  } else {
    outcome.reject(new TransactionFailedError("the job completed without a transaction hash", { jobId }));
  }
}

function failedError(failedReason: string | undefined, jobId: string): TransactionFailedError {
  return new TransactionFailedError(`the submitter failed the job: ${failedReason || "no reason given"}`, { jobId });
}

async function queueCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await withTimeout(call(), QUEUE_CALL_TIMEOUT_MS);
  } catch (err) {
    throw new QueueUnavailableError(
      `the transaction queue is unavailable (${errorMessage(err)}); nothing was confirmed, retry with the same X-Request-Id`,
      {},
      { cause: err },
    );
  }
}

interface Outcome<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
  settled(): boolean;
}

function createOutcome<T>(): Outcome<T> {
  let done = false;
  let resolveFn: (value: T) => void = () => undefined;
  let rejectFn: (err: unknown) => void = () => undefined;
  const promise = new Promise<T>((resolve, reject) => {
    resolveFn = resolve;
    rejectFn = reject;
  });
  // A rejection that lands after the caller stopped awaiting must not become an unhandled rejection.
  promise.catch(() => undefined);
  return {
    promise,
    resolve: (value) => {
      if (!done) {
        done = true;
        resolveFn(value);
      }
    },
    reject: (err) => {
      if (!done) {
        done = true;
        rejectFn(err);
      }
    },
    settled: () => done,
  };
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

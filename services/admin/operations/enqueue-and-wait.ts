import type { Queue, QueueEvents } from "bullmq";
import { errorMessage } from "../../../shared/errors";
import { isTxJobProgress } from "../../../shared/queues";
import { BroadcastTimeoutError, QueueUnavailableError, TransactionFailedError } from "./errors";

export const DEFAULT_BROADCAST_TIMEOUT_MS = 30_000;
/** The producer connection fails fast once connected, but waits while it has never connected: bound it. */
export const QUEUE_CALL_TIMEOUT_MS = 5_000;
/** Backstop for a missed QueueEvents message (the event reader connects late or reconnects). */
const POLL_INTERVAL_MS = 1_000;

export interface BroadcastOutcome {
  readonly transactionHash: string;
  /** The submitter completed the job without sending: its effect was already on chain. */
  readonly noop: boolean;
}

export interface EnqueueAndWaitParams {
  readonly queue: Queue;
  readonly events: QueueEvents;
  readonly jobId: string;
  readonly timeoutMs: number;
  /** Adds the job; runs only after the listeners are attached, so no event can slip by. Absent: wait on an existing job. */
  readonly enqueue?: () => Promise<unknown>;
}

/**
 * What every admin operation that sends a transaction does after its checks: enqueue (or find) the job,
 * then answer as soon as the submitter reports the broadcast: the first of the progress event, the
 * completed event (a job that was already done, or a no-op), or a poll of the job. Never waits for
 * confirmations. A failed job is a TransactionFailedError; no answer in time a BroadcastTimeoutError.
 */
export async function enqueueAndWaitForBroadcast(params: EnqueueAndWaitParams): Promise<BroadcastOutcome> {
  const { queue, events, jobId, timeoutMs } = params;
  const outcome = createOutcome<BroadcastOutcome>();
  const onProgress = (args: { jobId: string; data: unknown }): void => {
    if (args.jobId === jobId && isTxJobProgress(args.data)) {
      outcome.resolve({ transactionHash: args.data.transactionHash, noop: false });
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
async function pollJob(queue: Queue, jobId: string, outcome: Outcome<BroadcastOutcome>): Promise<void> {
  try {
    const job = await withTimeout(queue.getJob(jobId), QUEUE_CALL_TIMEOUT_MS);
    if (!job || outcome.settled()) {
      return;
    }
    if (isTxJobProgress(job.progress)) {
      outcome.resolve({ transactionHash: job.progress.transactionHash, noop: false });
    } else if (job.finishedOn !== undefined && job.returnvalue !== null && job.returnvalue !== undefined) {
      settleCompleted(outcome, job.returnvalue, jobId);
    } else if (job.finishedOn !== undefined && (await job.isFailed())) {
      outcome.reject(failedError(job.failedReason, jobId));
    }
  } catch {
    // Transient: the next poll or an event settles it, or the deadline answers 504.
  }
}

function settleCompleted(outcome: Outcome<BroadcastOutcome>, returnvalue: unknown, jobId: string): void {
  const result = returnvalue as { transactionHash?: unknown; noop?: unknown } | null;
  if (typeof result?.transactionHash === "string") {
    outcome.resolve({ transactionHash: result.transactionHash, noop: result.noop === true });
  } else {
    outcome.reject(new TransactionFailedError("the job completed without a transaction hash", { jobId }));
  }
}

function failedError(failedReason: string | undefined, jobId: string): TransactionFailedError {
  return new TransactionFailedError(`the submitter failed the job: ${failedReason || "no reason given"}`, { jobId });
}

/** A queue command, bounded; any failure is QueueUnavailableError (503). */
export async function queueCall<T>(call: () => Promise<T>): Promise<T> {
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

export function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

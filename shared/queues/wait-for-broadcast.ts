import type { Queue, QueueEvents } from "bullmq";
import { RouterError, errorClass } from "../errors";
import { isTxJobProgress } from "./jobs";
import { withTimeout } from "../timing";

/**
 * Waiting for a transaction job's broadcast, shared by every producer that answers a caller with the hash
 * (the admin API's operations, the auction's relayed fulfills). The submitter reports the broadcast through
 * `job.updateProgress` (TxJobProgress); nobody waits for confirmations here.
 */

/** The default bound of one queue command while waiting; the caller's deadline bounds the whole wait. */
export const DEFAULT_QUEUE_CALL_TIMEOUT_MS = 5_000;
/** Backstop for a missed QueueEvents message (the event reader connects late or reconnects), or the only signal without events. */
export const DEFAULT_BROADCAST_POLL_INTERVAL_MS = 1_000;

export interface BroadcastOutcome {
  readonly transactionHash: string;
  /** The submitter completed the job without sending: its effect was already on chain. */
  readonly noop: boolean;
}

/** No broadcast was reported in time; the job stays queued (or running). */
export class BroadcastWaitTimeoutError extends errorClass(RouterError, "BROADCAST_TIMEOUT", "retriable") {}

/** The submitter gave up on the job (attempts exhausted or a terminal failure), or it completed without a hash. */
export class TxJobFailedError extends errorClass(RouterError, "TRANSACTION_FAILED", "terminal") {}

export interface WaitForBroadcastParams {
  readonly queue: Pick<Queue, "getJob">;
  /** The queue's event stream; without it the job is only polled (every `pollIntervalMs`). */
  readonly events?: Pick<QueueEvents, "on" | "off">;
  readonly jobId: string;
  readonly timeoutMs: number;
  /** Adds the job; runs only after the listeners are attached, so no event can slip by. Absent: wait on an existing job. */
  readonly enqueue?: () => Promise<unknown>;
  readonly pollIntervalMs?: number;
  readonly queueCallTimeoutMs?: number;
}

/**
 * Enqueues (or finds) the job, then settles on the first of: the progress event, the completed event (a job
 * already done, or a no-op), the failed event, or a poll of the stored job (progress first, so a job that
 * failed after broadcasting still answers with its hash). A failed job is a TxJobFailedError; no answer
 * within `timeoutMs` a BroadcastWaitTimeoutError. An `enqueue` failure is rethrown as it is.
 */
export async function waitForBroadcast(params: WaitForBroadcastParams): Promise<BroadcastOutcome> {
  const { queue, events, jobId, timeoutMs } = params;
  const pollIntervalMs = params.pollIntervalMs ?? DEFAULT_BROADCAST_POLL_INTERVAL_MS;
  const callTimeoutMs = params.queueCallTimeoutMs ?? DEFAULT_QUEUE_CALL_TIMEOUT_MS;
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
  events?.on("progress", onProgress);
  events?.on("completed", onCompleted);
  events?.on("failed", onFailed);
  const timer = setTimeout(() => {
    outcome.reject(
      new BroadcastWaitTimeoutError(
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
      void pollJob(queue, jobId, outcome, callTimeoutMs).finally(() => {
        if (!outcome.settled()) {
          poller = setTimeout(poll, pollIntervalMs);
        }
      });
    };
    poll();
    return await outcome.promise;
  } finally {
    clearTimeout(timer);
    clearTimeout(poller);
    events?.off("progress", onProgress);
    events?.off("completed", onCompleted);
    events?.off("failed", onFailed);
  }
}

/** How a caller names the wait's two failures in its own error set (an HTTP status, a relay refusal code…). */
export interface BroadcastWaitErrors {
  readonly timedOut: (err: BroadcastWaitTimeoutError) => Error;
  readonly failed: (err: TxJobFailedError) => Error;
}

/** waitForBroadcast, with its two failures thrown as the caller's errors; anything else (an enqueue failure) as it is. */
export async function waitForBroadcastAs(
  params: WaitForBroadcastParams,
  errors: BroadcastWaitErrors,
): Promise<BroadcastOutcome> {
  try {
    return await waitForBroadcast(params);
  } catch (err) {
    if (err instanceof BroadcastWaitTimeoutError) {
      throw errors.timedOut(err);
    }
    if (err instanceof TxJobFailedError) {
      throw errors.failed(err);
    }
    throw err;
  }
}

/**
 * One queue command of a producer, bounded: a producer connection waits while it has never connected. Any
 * failure, the bound included, is thrown as the caller's error (`unavailable`).
 */
export async function boundedQueueCall<T>(
  call: () => Promise<T>,
  unavailable: (err: unknown) => Error,
  timeoutMs = DEFAULT_QUEUE_CALL_TIMEOUT_MS,
): Promise<T> {
  try {
    return await withTimeout(call(), timeoutMs);
  } catch (err) {
    throw unavailable(err);
  }
}

/** Reads the job's stored state; Redis errors are ignored here because the deadline still bounds the wait. */
async function pollJob(
  queue: Pick<Queue, "getJob">,
  jobId: string,
  outcome: Outcome<BroadcastOutcome>,
  callTimeoutMs: number,
): Promise<void> {
  try {
    const job = await withTimeout(queue.getJob(jobId), callTimeoutMs);
    if (!job || outcome.settled()) {
      return;
    }
    if (isTxJobProgress(job.progress)) {
      outcome.resolve({ transactionHash: job.progress.transactionHash, noop: false });
    } else if (job.finishedOn !== undefined && job.returnvalue !== null && job.returnvalue !== undefined) {
      settleCompleted(outcome, job.returnvalue, jobId);
    } else if (job.finishedOn !== undefined && (await withTimeout(job.isFailed(), callTimeoutMs))) {
      outcome.reject(failedError(job.failedReason, jobId));
    }
  } catch {
    // Transient: the next poll or an event settles it, or the deadline does.
  }
}

function settleCompleted(outcome: Outcome<BroadcastOutcome>, returnvalue: unknown, jobId: string): void {
  const result = returnvalue as { transactionHash?: unknown; noop?: unknown } | null;
  if (typeof result?.transactionHash === "string") {
    outcome.resolve({ transactionHash: result.transactionHash, noop: result.noop === true });
  } else {
    outcome.reject(new TxJobFailedError("the job completed without a transaction hash", { jobId }));
  }
}

function failedError(failedReason: string | undefined, jobId: string): TxJobFailedError {
  return new TxJobFailedError(`the submitter failed the job: ${failedReason || "no reason given"}`, { jobId });
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

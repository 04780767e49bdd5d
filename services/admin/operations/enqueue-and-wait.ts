import type { Queue, QueueEvents } from "bullmq";
import { errorMessage } from "../../../shared/errors";
import {
  DEFAULT_QUEUE_CALL_TIMEOUT_MS,
  boundedQueueCall,
  waitForBroadcast,
  type BroadcastOutcome,
} from "../../../shared/queues/wait-for-broadcast";
import { QueueUnavailableError } from "./errors";

export type { BroadcastOutcome } from "../../../shared/queues/wait-for-broadcast";
export { withTimeout } from "../../../shared/queues/wait-for-broadcast";

export const DEFAULT_BROADCAST_TIMEOUT_MS = 30_000;
/** The producer connection fails fast once connected, but waits while it has never connected: bound it. */
export const QUEUE_CALL_TIMEOUT_MS = DEFAULT_QUEUE_CALL_TIMEOUT_MS;

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
 * then answer as soon as the submitter reports the broadcast (shared/queues/wait-for-broadcast.ts). Never
 * waits for confirmations. The wait's own errors reach the client as they are: a failed job is
 * TRANSACTION_FAILED (502), no answer in time BROADCAST_TIMEOUT (504), both with the job id.
 */
export function enqueueAndWaitForBroadcast(params: EnqueueAndWaitParams): Promise<BroadcastOutcome> {
  return waitForBroadcast(params);
}

/** A queue command, bounded; any failure is QueueUnavailableError (503). */
export function queueCall<T>(call: () => Promise<T>): Promise<T> {
  return boundedQueueCall(
    call,
    (err) =>
      new QueueUnavailableError(
        `the transaction queue is unavailable (${errorMessage(err)}); nothing was confirmed, retry with the same X-Request-Id`,
        {},
        { cause: err },
      ),
    QUEUE_CALL_TIMEOUT_MS,
  );
}

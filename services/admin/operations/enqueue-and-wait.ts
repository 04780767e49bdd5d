import type { Queue, QueueEvents } from "bullmq";
import { errorMessage } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import { DEFAULT_QUEUE_CALL_TIMEOUT_MS, boundedQueueCall } from "../../../shared/queues/wait-for-broadcast";
import { QueueUnavailableError } from "./errors";

/**
 * How long an admin operation that sends a transaction waits, after its checks, for the submitter to report the
 * broadcast (shared/queues/wait-for-broadcast.ts; never for confirmations). The wait's own errors reach the
 * client as they are: a failed job is TRANSACTION_FAILED (502), no answer in time BROADCAST_TIMEOUT (504).
 */
export const DEFAULT_BROADCAST_TIMEOUT_MS = 30_000;
/** The producer connection fails fast once connected, but waits while it has never connected: bound it. */
export const QUEUE_CALL_TIMEOUT_MS = DEFAULT_QUEUE_CALL_TIMEOUT_MS;

/** What an admin operation that sends a transaction needs to enqueue its job and wait for the broadcast. */
export interface TxRequestDeps {
  /** The transaction queue of a configured chain, and its events. */
  queueFor(chainId: number): Queue;
  queueEventsFor(chainId: number): QueueEvents;
  /** How long a request waits for the submitter's broadcast; DEFAULT_BROADCAST_TIMEOUT_MS by default. */
  readonly broadcastTimeoutMs?: number;
  readonly logger: Logger;
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

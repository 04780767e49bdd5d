import { ReplicaAckTimeoutError } from "../../../shared/coordination/replication";
import { RouterError, errorClass } from "../../../shared/errors";

/**
 * Another processor wrote this job's record since we read it: the BullMQ lock was lost (a long event-loop
 * stall) and a second worker took the job over. Retriable so BullMQ sees an ordinary error, but the owner of
 * the lock is the one that carries on; this processor stops before it signs or sends anything more.
 */
export class TxRecordConflictError extends errorClass(RouterError, "TX_RECORD_CONFLICT", "retriable") {}

/**
 * The job's record was written for different job data (same job id, different request). Not retriable:
 * resuming it would confirm someone else's transaction, and sending anew could pay twice.
 */
export class TxRecordMismatchError extends errorClass(RouterError, "TX_RECORD_MISMATCH", "terminal") {}

/** Every fresh nonce tried was already used on chain; the chain's nonce is moving under us (someone else sends). */
export class NonceRetriesExhaustedError extends errorClass(RouterError, "NONCE_RETRIES_EXHAUSTED", "retriable") {}

/**
 * The job's nonce looks used by a transaction it did not send, but not enough providers confirm it
 * (confirm-nonce-taken.ts), and the job is not protected against replays: no new transaction is built.
 * Retriable and "not yet": it spends no attempt, the job is parked until `retryAtMs` (outcome-policy.ts), since its
 * transaction may be mined and only hidden by lagging receipts; a job reported failed then could be asked again
 * and pay twice. The next run waits on the job's own transaction again, and rebuilds only once it is proven.
 */
export class NonceTakenUnconfirmedError extends errorClass(RouterError, "NONCE_TAKEN_UNCONFIRMED", "not-yet") {}

/**
 * The process is shutting down: the job stops at a safe point (its transaction, if any, is persisted) and is
 * handed back to the queue for the next submitter instance. Not a failure of the job.
 */
export class SubmitterShutdownError extends errorClass(RouterError, "SUBMITTER_SHUTDOWN", "retriable") {}

/**
 * The job stalled (its process died or lost the BullMQ lock) more than the submitter's limit and has no
 * transaction record: it kills every process it runs in before it sends anything. Terminal; nothing is on chain.
 */
export class JobStalledError extends errorClass(RouterError, "JOB_STALLED", "terminal") {}

/** Job data that no submitter can process (schema, unknown name, wrong chain's queue). */
export class InvalidTxJobError extends errorClass(RouterError, "INVALID_JOB", "terminal") {}

/**
 * This process no longer holds the chain's sender lease (it lapsed, or another instance took it over): the
 * write or broadcast was refused and nothing was sent. Like a shutdown, the job goes back to the lease holder.
 */
export class SenderLeaseLostError extends errorClass(RouterError, "SENDER_LEASE_LOST", "retriable") {}

/**
 * The sender term could not end within its bound (the worker would not pause: seen after a Redis restart, when
 * BullMQ's pause waits on a connection that never comes back). The process can neither send nor safely begin
 * another term with that worker, so it stops competing for the lease; run as a service it exits and is
 * restarted, which is safe because every job, record and nonce lives in Redis.
 */
export class SenderTermStuckError extends errorClass(RouterError, "SENDER_TERM_STUCK", "terminal") {}

/**
 * Redis refused to name the job's mined transaction to the ledger. Nothing about the transaction changes: "not
 * yet", the job is parked until `retryAtMs` without using an attempt (outcome-policy.ts), runs again from its record
 * (confirmed or reverted: nothing is sent) and names it then. It completes only once the naming is in Redis. A
 * claim's reverted record is archived only after that (the not-yet park comes before the claim's).
 */
export class LedgerNamingError extends errorClass(RouterError, "LEDGER_NAMING_FAILED", "not-yet") {}

/**
 * A broadcast stopped before anything went out, by this process's own guards: its sender lease is gone, or the
 * writes before it did not reach the replicas. The caller rethrows it; it is never the node refusing the transaction.
 */
export function isStoppedBeforeSending(err: unknown): boolean {
  return err instanceof SenderLeaseLostError || err instanceof ReplicaAckTimeoutError;
}

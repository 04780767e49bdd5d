import { RouterError } from "../../../shared/errors";

/**
 * Conditions of admin operations. Their codes are keys of HTTP_STATUS (services/admin/errors.ts), which is
 * where each gets its status; operations themselves know nothing about HTTP.
 */

/** The router's unlocked balance on the chain is below the amount asked for. */
export class InsufficientLiquidityError extends RouterError {
  readonly code = "INSUFFICIENT_LIQUIDITY";
  readonly retriable = false;
}

/** The request id names an existing job whose data differs: a reused X-Request-Id, not a retry. */
export class RequestIdConflictError extends RouterError {
  readonly code = "REQUEST_ID_CONFLICT";
  readonly retriable = false;
}

/** The unlocked balance could not be read (provider down or too slow); nothing was enqueued. */
export class BalanceUnavailableError extends RouterError {
  readonly code = "BALANCE_UNAVAILABLE";
  readonly retriable = true;
}

/** Redis did not take or answer a queue command in time; the job may or may not exist. */
export class QueueUnavailableError extends RouterError {
  readonly code = "QUEUE_UNAVAILABLE";
  readonly retriable = true;
}

/** The submitter gave up on the job (its attempts are exhausted or the failure is terminal). */
export class TransactionFailedError extends RouterError {
  readonly code = "TRANSACTION_FAILED";
  readonly retriable = false;
}

/** No broadcast was reported in time; the job stays queued and a retry with the same request id waits on it. */
export class BroadcastTimeoutError extends RouterError {
  readonly code = "BROADCAST_TIMEOUT";
  readonly retriable = true;
}

/** No sending-side transaction for (senderChainId, transactionId, user) naming this router. */
export class TransactionNotFoundError extends RouterError {
  readonly code = "TRANSACTION_NOT_FOUND";
  readonly retriable = false;
}

/** A chain read the decision needs failed (no provider answered); nothing was enqueued. */
export class ChainUnavailableError extends RouterError {
  readonly code = "CHAIN_UNAVAILABLE";
  readonly retriable = true;
}

import { RouterError } from "../../../shared/errors";

/**
 * Conditions of admin operations. Their codes are keys of HTTP_STATUS (services/admin/errors.ts), which is
 * where each gets its status; operations themselves know nothing about HTTP. The broadcast wait's two
 * failures (TRANSACTION_FAILED, BROADCAST_TIMEOUT) are shared/queues/wait-for-broadcast.ts's own classes.
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

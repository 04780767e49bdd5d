import { RouterError, errorClass } from "../../../shared/errors";

/**
 * Conditions of admin operations. Their codes are keys of HTTP_STATUS (services/admin/errors.ts), which is
 * where each gets its status; operations themselves know nothing about HTTP. The broadcast wait's two
 * failures (TRANSACTION_FAILED, BROADCAST_TIMEOUT) are shared/queues/wait-for-broadcast.ts's own classes.
 */

/** The router's unlocked balance on the chain is below the amount asked for. */
export class InsufficientLiquidityError extends errorClass(RouterError, "INSUFFICIENT_LIQUIDITY", "terminal") {}

/** The request id names an existing job whose data differs: a reused X-Request-Id, not a retry. */
export class RequestIdConflictError extends errorClass(RouterError, "REQUEST_ID_CONFLICT", "terminal") {}

/** The unlocked balance could not be read (provider down or too slow); nothing was enqueued. */
export class BalanceUnavailableError extends errorClass(RouterError, "BALANCE_UNAVAILABLE", "retriable") {}

/** Redis did not take or answer a queue command in time; the job may or may not exist. */
export class QueueUnavailableError extends errorClass(RouterError, "QUEUE_UNAVAILABLE", "retriable") {}

/** No sending-side transaction for (senderChainId, transactionId, user) naming this router. */
export class TransactionNotFoundError extends errorClass(RouterError, "TRANSACTION_NOT_FOUND", "terminal") {}

/** A chain read the decision needs failed (no provider answered); nothing was enqueued. */
export class ChainUnavailableError extends errorClass(RouterError, "CHAIN_UNAVAILABLE", "retriable") {}

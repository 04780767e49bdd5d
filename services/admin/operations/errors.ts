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

/** The sending side is no longer prepared on chain: already fulfilled or cancelled. */
export class SenderNotPreparedError extends RouterError {
  readonly code = "SENDER_NOT_PREPARED";
  readonly retriable = false;
}

/** The receiving side is prepared and not expired, expired but not cancelled, or being prepared right now. */
export class ReceiverLiveError extends RouterError {
  readonly code = "RECEIVER_LIVE";
  readonly retriable = false;
}

/** The receiving side was fulfilled: the sending side is the router's claim, cancelling it loses the funds. */
export class ReceiverFulfilledError extends RouterError {
  readonly code = "RECEIVER_FULFILLED";
  readonly retriable = false;
}

/** The receiving side cannot be checked (chain not configured, or on-chain state the events do not explain). */
export class ReceiverUnverifiableError extends RouterError {
  readonly code = "RECEIVER_UNVERIFIABLE";
  readonly retriable = false;
}

/** The sending prepare is less than 780 s old (PROTOCOL §3.6 rule 2). */
export class SenderTooNewError extends RouterError {
  readonly code = "SENDER_TOO_NEW";
  readonly retriable = true;
}

/** A chain read the decision needs failed (no provider answered); nothing was enqueued. */
export class ChainUnavailableError extends RouterError {
  readonly code = "CHAIN_UNAVAILABLE";
  readonly retriable = true;
}

/**
 * A receiving prepare is the transfer's recorded decision (shared/queues/transfer-decision.ts) and the
 * receiving chain does not show that side cancelled: its transaction may be in flight or in blocks the
 * provider has not seen. `force` does not override it.
 */
export class ReceiverPrepareDecidedError extends RouterError {
  readonly code = "RECEIVER_PREPARE_DECIDED";
  readonly retriable = false;
}

import { RouterError, errorClass } from "../../../shared/errors";

/**
 * Conditions of the transfer-lifecycle operations (prepare-receiver, fulfill-sender, cancel-sender,
 * cancel-receiver). Each has a stable `code`, `retriable`, and `cancellable`: a terminal refusal of a
 * receiving prepare that should refund the user now rather than at expiry (the cancellable refusals of
 * docs/protocol.md#receiving-prepare). The processor enqueues that refund; the cancel-sender job re-checks the cancel
 * rules itself.
 */
export abstract class LifecycleError extends RouterError {
  readonly cancellable: boolean = false;
}

export function isCancellable(err: unknown): boolean {
  return err instanceof LifecycleError && err.cancellable && !err.retriable;
}

/**
 * "Not yet" (RouterError.notYet): the job can only succeed once `retryAtMs` (wall clock, computed from the chain's
 * own clock) has passed; it is carried in the context, and the submitter parks the job until then
 * (outcome-policy.ts). Thrown only before anything is sent. The family carries `retryAtMs`; each of its classes is
 * declared with the "not-yet" kind (errorClass), which makes it retriable and not yet.
 */
export abstract class NotYetError extends LifecycleError {
  constructor(message: string, retryAtMs: number, context: Record<string, unknown> = {}) {
    super(message, { ...context, retryAtMs });
  }
}

/** A chain the operation must read is not in chainConfig. */
export class ChainNotConfiguredError extends errorClass(LifecycleError, "CHAIN_NOT_CONFIGURED", "terminal") {}

/**
 * The sending prepare has fewer confirmations than its chain's `confirmations`: a re-org could still remove
 * it, and a receiving side prepared for it would then pay the user for nothing. Retriable (backoff).
 */
export class SenderNotConfirmedError extends errorClass(LifecycleError, "SENDER_NOT_CONFIRMED", "retriable") {}

/** The sending side is already fulfilled or cancelled on chain. */
export class SenderCompletedError extends errorClass(LifecycleError, "SENDER_COMPLETED", "terminal") {}

/** The sending side is prepared on chain with other amount, expiry or block than the job says (tampered or stale data). */
export class SenderDataMismatchError extends errorClass(LifecycleError, "SENDER_DATA_MISMATCH", "terminal") {}

/**
 * `verifySenderPrepare` refused the sending side. The code is the refusal reason in upper snake case
 * (`bid-signer-mismatch` → `BID_SIGNER_MISMATCH`); `cancellable` is verify's own verdict.
 */
export class SenderVerificationError extends LifecycleError {
  readonly code: string;
  readonly retriable = false;
  override readonly cancellable: boolean;
  readonly reason: string;

  constructor(params: { reason: string; cancellable: boolean; detail: string; context?: Record<string, unknown> }) {
    super(`sending side refused: ${params.detail}`, { ...params.context, reason: params.reason });
    this.reason = params.reason;
    this.cancellable = params.cancellable;
    this.code = verifyReasonCode(params.reason);
  }
}

/** `receivingAddress-mismatch` → `RECEIVING_ADDRESS_MISMATCH`. */
export function verifyReasonCode(reason: string): string {
  return reason
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/-/g, "_")
    .toUpperCase();
}

/**
 * The router's unlocked liquidity on the receiving chain is below the receiving amount
 * (docs/protocol.md#receiving-prepare, NotEnoughLiquidity).
 */
export class NotEnoughLiquidityError extends errorClass(LifecycleError, "NOT_ENOUGH_LIQUIDITY", "terminal") {
  override readonly cancellable = true;
}

/** The fulfill signature does not recover to the transfer's user (the contract would revert #F:022). */
export class InvalidUserSignatureError extends errorClass(LifecycleError, "INVALID_USER_SIGNATURE", "terminal") {}

/**
 * The sending side expired before the router claimed it: the contract refuses the fulfill (#F:020) and
 * anyone may now cancel it to the user. The router lost its claim; an operator must look.
 */
export class SenderExpiredError extends errorClass(LifecycleError, "SENDER_EXPIRED", "terminal") {}

/**
 * Receiving prepare refused for good: a sender cancel is decided, queued (in any state) or has a transaction
 * for this transfer (shared/coordination/transfer-decision.ts). Not cancellable: the refund is already under way.
 */
export class SenderCancelDecidedError extends errorClass(LifecycleError, "SENDER_CANCEL_DECIDED", "terminal") {}

/**
 * The router's unlocked liquidity covers the amount (a receiving prepare's, a withdrawal's) only if the chain's
 * holds of transactions in flight (sent, not mined yet) are ignored: parked briefly, not refused; once they are
 * mined the chain's balance decides (services/submitter/liquidity-in-flight.ts).
 */
export class LiquidityInFlightError extends errorClass(NotYetError, "LIQUIDITY_IN_FLIGHT", "not-yet") {}

/** A transaction in flight is mined within a few blocks; a job parked behind it looks again this soon. */
export const LIQUIDITY_IN_FLIGHT_RETRY_MS = 2_000;

/** Receiver cancel before the receiving expiry: only the user may cancel then (#C:022); parked until expiry. */
export class ReceiverNotExpiredError extends errorClass(NotYetError, "RECEIVER_NOT_EXPIRED", "not-yet") {}

/** The receiving side named by the job is not prepared on chain. */
export class ReceiverNotPreparedError extends errorClass(LifecycleError, "RECEIVER_NOT_PREPARED", "terminal") {}

/** The receiving side is prepared on chain with other amount, expiry or block than the job says. */
export class ReceiverDataMismatchError extends errorClass(LifecycleError, "RECEIVER_DATA_MISMATCH", "terminal") {}

/**
 * A withdrawal with no send record (its first run, or a run after a Redis failover lost the record) found
 * transactions of the signer in flight that no send record names: one may be this very withdrawal, sent before the
 * record was lost. Parked until they are mined, then the chain is searched for it (find-own-withdrawal.ts).
 */
export class WithdrawalUnsettledError extends errorClass(NotYetError, "WITHDRAWAL_UNSETTLED", "not-yet") {}

/** Unknown transactions in flight are mined within a few blocks; the withdrawal looks again this soon. */
export const WITHDRAWAL_UNSETTLED_RETRY_MS = 5_000;

/**
 * A receiving prepare found transactions of the router's signer in flight on the SENDING chain that no send record
 * names: one may be a refund (cancel-sender) of this very transfer whose decision and record a Redis failover
 * lost. Parked until they are mined, then the sending side is read again (prepare-receiver.ts, step 4).
 */
export class SenderRefundUnsettledError extends errorClass(NotYetError, "SENDER_REFUND_UNSETTLED", "not-yet") {}

/** Unknown transactions in flight are mined within a few blocks; the receiving prepare looks again this soon. */
export const SENDER_REFUND_UNSETTLED_RETRY_MS = 5_000;

/** Blocks come every few seconds: a sender cancel waiting for a revert to be final looks again this soon. */
export const REVERT_FINALITY_RETRY_MS = 3_000;

import { RouterError, errorClass } from "../errors";
import type { SenderCancelVerdict } from "./sender-cancel-check";

/**
 * The refusals of a sender cancel, defined once for every caller of the shared check (the admin route and the
 * submitter's cancel-sender job). `retriable` says whether the same request can pass later without any change
 * (docs/decisions.md, "One error set for sender-cancel refusals"): a time rule or a state the chain will settle.
 * `notYet` marks the time rules (SENDER_TOO_NEW, RECEIVER_UNVERIFIABLE): they pass at the `retryAtMs` in their
 * context. How to wait is the caller's: the submitter parks the job until then, the admin answers 409 at once.
 */

/** The sending side is not prepared on chain: never was, or already fulfilled or cancelled. */
export class SenderNotPreparedError extends errorClass(RouterError, "SENDER_NOT_PREPARED", "terminal") {}

/** The receiving side is prepared and not expired: the user can still be paid there. */
export class ReceiverLiveError extends errorClass(RouterError, "RECEIVER_LIVE", "terminal") {}

/** The receiving side was fulfilled: the sending side is the router's claim, cancelling it loses the funds. */
export class ReceiverFulfilledError extends errorClass(RouterError, "RECEIVER_FULFILLED", "terminal") {}

/**
 * The receiving side expired but is still prepared: it must be cancelled first. Not retriable: the receiver
 * cancel, once seen, makes the lifecycle plan the sender cancel afresh.
 */
export class ReceiverNotCancelledError extends errorClass(RouterError, "RECEIVER_NOT_CANCELLED", "terminal") {}

/** The receiving chain shows a receiving side its events do not explain: an operator must look. */
export class ReceiverStateUnknownError extends errorClass(RouterError, "RECEIVER_STATE_UNKNOWN", "terminal") {}

/** A prepare-receiver job can still run or has a transaction the chain may not show yet; the chain tells later. */
export class ReceiverBeingPreparedError extends errorClass(RouterError, "RECEIVER_BEING_PREPARED", "retriable") {}

/** The receiving chain is not configured: the sending side can be cancelled after its expiry (`retryAtMs`). */
export class ReceiverUnverifiableError extends errorClass(RouterError, "RECEIVER_UNVERIFIABLE", "not-yet") {}

/** docs/protocol.md#cancel-rules: before the sender's expiry the sending prepare must be 780 s old (`retryAtMs`). */
export class SenderTooNewError extends errorClass(RouterError, "SENDER_TOO_NEW", "not-yet") {}

/**
 * A receiving prepare is the transfer's recorded decision (shared/coordination/transfer-decision.ts) and the receiving
 * chain does not show that side cancelled: its transaction may be in flight or in blocks a provider lags behind.
 * The chain tells later (then RECEIVER_LIVE, or cancelled and the refund goes ahead). `force` never overrides it.
 */
export class ReceiverPrepareDecidedError extends errorClass(RouterError, "RECEIVER_PREPARE_DECIDED", "retriable") {}

/**
 * The transfer's recorded receiving prepare was mined reverted, but not yet the receiving chain's `confirmations`
 * deep: a re-org could free its nonce and mine the same signed transaction successfully
 * (shared/chain/reverted-prepare.ts). Not yet: the submitter parks the refund until the revert is final
 * (`retryAtMs` in the context), the admin route answers 409 at once.
 */
export class ReceiverPrepareRevertNotFinalError extends errorClass(
  RouterError,
  "RECEIVER_PREPARE_REVERT_NOT_FINAL",
  "not-yet",
) {}

export interface RefusalOptions {
  /** Wall-clock ms after which a time rule may pass (SENDER_TOO_NEW, RECEIVER_UNVERIFIABLE); put in the context. */
  readonly retryAtMs?: number;
  /** Appended to the message of the refusals an admin's `force` could override. */
  readonly forceHint?: string;
  readonly context?: Record<string, unknown>;
}

/** The one mapping from a refused verdict of checkSenderCancelOnChain to its error. */
export function senderCancelRefusalError(
  verdict: Extract<SenderCancelVerdict, { ok: false }>,
  options: RefusalOptions = {},
): RouterError {
  const context = {
    ...options.context,
    ...(options.retryAtMs === undefined ? {} : { retryAtMs: options.retryAtMs }),
    ...(verdict.retryAtSec === undefined ? {} : { retryAtChainSec: verdict.retryAtSec }),
  };
  const overridable = verdict.detail + (options.forceHint ?? "");
  switch (verdict.refusal) {
    case "receiver-fulfilled":
      return new ReceiverFulfilledError(verdict.detail, context);
    case "receiver-live":
      return new ReceiverLiveError(overridable, context);
    case "receiver-not-cancelled":
      return new ReceiverNotCancelledError(overridable, context);
    case "receiver-being-prepared":
      return new ReceiverBeingPreparedError(overridable, context);
    case "receiver-state-unknown":
      return new ReceiverStateUnknownError(overridable, context);
    case "receiver-unverifiable":
      return new ReceiverUnverifiableError(overridable, context);
    case "sender-too-new":
      return new SenderTooNewError(`${verdict.detail}; retry after chain time ${verdict.retryAtSec ?? "?"}`, context);
  }
}

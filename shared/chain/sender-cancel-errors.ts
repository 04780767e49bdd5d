import { RouterError } from "../errors";
import type { SenderCancelVerdict } from "./sender-cancel-check";

/**
 * The refusals of a sender cancel, defined once for every caller of the shared check (the admin route and the
 * submitter's cancel-sender job). `retriable` says whether the same request can pass later without any change
 * (docs/decisions.md, "One error set for sender-cancel refusals"): a time rule or a state the chain will settle.
 * `notYet` marks the time rules (SENDER_TOO_NEW, RECEIVER_UNVERIFIABLE): they pass at the `retryAtMs` in their
 * context. How to wait is the caller's: the submitter parks the job until then, the admin answers 409 at once.
 */

/** The sending side is not prepared on chain: never was, or already fulfilled or cancelled. */
export class SenderNotPreparedError extends RouterError {
  readonly code = "SENDER_NOT_PREPARED";
  readonly retriable = false;
}

/** The receiving side is prepared and not expired: the user can still be paid there. */
export class ReceiverLiveError extends RouterError {
  readonly code = "RECEIVER_LIVE";
  readonly retriable = false;
}

/** The receiving side was fulfilled: the sending side is the router's claim, cancelling it loses the funds. */
export class ReceiverFulfilledError extends RouterError {
  readonly code = "RECEIVER_FULFILLED";
  readonly retriable = false;
}

/**
 * The receiving side expired but is still prepared: it must be cancelled first. Not retriable: the receiver
 * cancel, once seen, makes the lifecycle plan the sender cancel afresh.
 */
export class ReceiverNotCancelledError extends RouterError {
  readonly code = "RECEIVER_NOT_CANCELLED";
  readonly retriable = false;
}

/** The receiving chain shows a receiving side its events do not explain: an operator must look. */
export class ReceiverStateUnknownError extends RouterError {
  readonly code = "RECEIVER_STATE_UNKNOWN";
  readonly retriable = false;
}

/** A prepare-receiver job can still run or has a transaction the chain may not show yet; the chain tells later. */
export class ReceiverBeingPreparedError extends RouterError {
  readonly code = "RECEIVER_BEING_PREPARED";
  readonly retriable = true;
}

/** The receiving chain is not configured: the sending side can be cancelled after its expiry (`retryAtMs`). */
export class ReceiverUnverifiableError extends RouterError {
  readonly code = "RECEIVER_UNVERIFIABLE";
  readonly retriable = true;
  override readonly notYet = true;
}

/** docs/protocol.md#cancel-rules: before the sender's expiry the sending prepare must be 780 s old (`retryAtMs`). */
export class SenderTooNewError extends RouterError {
  readonly code = "SENDER_TOO_NEW";
  readonly retriable = true;
  override readonly notYet = true;
}

/**
 * A receiving prepare is the transfer's recorded decision (shared/coordination/transfer-decision.ts) and the receiving
 * chain does not show that side cancelled: its transaction may be in flight or in blocks a provider lags behind.
 * The chain tells later (then RECEIVER_LIVE, or cancelled and the refund goes ahead). `force` never overrides it.
 */
export class ReceiverPrepareDecidedError extends RouterError {
  readonly code = "RECEIVER_PREPARE_DECIDED";
  readonly retriable = true;
}

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

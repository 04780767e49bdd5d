import { ProtocolInputError } from "./errors";
import { SENDER_PREPARE_BUFFER_SEC, isTransactionExpired } from "./expiry";
import { TransferRecord } from "./types";
import { sameHex } from "./values";

/**
 * The router's derived cross-chain states (docs/protocol.md#transfer-states), plus `ReceiverPrepared` (receiver live:
 * nothing to do yet) and `Completed` (both sides settled).
 */
export type DerivedState =
  | "SenderExpired"
  | "SenderPrepared"
  | "ReceiverExpired"
  | "ReceiverFulfilled"
  | "ReceiverCancelled"
  | "ReceiverNotConfigured"
  | "ReceiverPrepared"
  | "Completed";

export type SenderCancelReason = "sender-expired" | "receiver-cancelled" | "receiver-not-configured";

/** Why the sender-cancel rules (docs/protocol.md#cancel-rules) refuse a cancel of the sending side. */
export type SenderCancelRefusal =
  | "sender-not-prepared"
  | "receiver-fulfilled"
  | "receiver-live"
  | "receiver-not-cancelled"
  | "sender-too-new"
  | "sender-prepare-time-unknown";

export type WaitReason =
  | "awaiting-confirmations"
  | "awaiting-user-fulfill"
  | "sender-expired-after-receiver-fulfilled"
  | Exclude<SenderCancelRefusal, "sender-not-prepared">;

export type Action =
  | { kind: "prepare-receiver"; state: "SenderPrepared" }
  | { kind: "fulfill-sender"; state: "ReceiverFulfilled" }
  | { kind: "cancel-sender"; state: DerivedState; reason: SenderCancelReason }
  | { kind: "cancel-receiver"; state: "ReceiverExpired"; reason: "receiver-expired" }
  /** `alert`: a state where the router's funds are at risk or already lost; an operator must look. */
  | { kind: "wait"; state: DerivedState; reason: WaitReason; alert: boolean }
  | { kind: "done"; state: "Completed"; alert: boolean };

export interface CheckSenderCancelParams {
  sender: TransferRecord;
  /** The receiving-side record; absent means the (synced) receiving source has none. */
  receiver?: TransferRecord;
  nowSec: number;
  /** Block timestamp of the sending prepare; defaults to `sender.preparedTimestamp`. */
  senderPreparedAtSec?: number;
  /**
   * Waive the 780 s buffer: only for the refund of a receiving prepare this router refused or declined (the
   * submitter's refusal, or the poller's failed verification of the sending side), checked against the
   * receiving chain itself with no prepare of ours in flight (sender-cancel-check.ts). The buffer exists for a
   * receiving prepare a lagging source does not show yet; only this router can prepare a receiving side naming
   * it, and its own prepare is excluded by the transfer decision record.
   */
  prepareBufferWaived?: boolean;
}

export type CheckSenderCancelResult = { ok: true } | { ok: false; reason: SenderCancelRefusal };

/**
 * docs/protocol.md#cancel-rules: sender-side cancel rules, stricter than the original. Every sender cancel goes through
 * this, from the lifecycle, from a refused prepare (`verifySenderPrepare` cancellable) or from the admin API.
 * - Never while a receiving side exists that is not Cancelled: a Fulfilled receiver means the user was paid
 *   and the sending side is the router's claim; a Prepared receiver can still be fulfilled (live), or, once
 *   expired, must be cancelled first and seen Cancelled (the original allowed the sender cancel as soon as
 *   the local clock passed the receiver's expiry, racing a last-second user fulfill).
 * - Before the sender's expiry, only once the prepare block is at least 780 s old (SenderTxTooNew), so a
 *   lagging receiving source has time to show a receiving prepare. An unknown prepare time counts as too new.
 * - After the sender's expiry no buffer applies: the receiving side (expiry one day earlier) can no longer
 *   be fulfilled, and anyone may cancel the sending side anyway.
 */
export function checkSenderCancel(params: CheckSenderCancelParams): CheckSenderCancelResult {
  const { sender, receiver, nowSec } = params;
  if (sender.status !== "Prepared") {
    return { ok: false, reason: "sender-not-prepared" };
  }
  if (receiver?.status === "Fulfilled") {
    return { ok: false, reason: "receiver-fulfilled" };
  }
  if (receiver?.status === "Prepared") {
    const live = !isTransactionExpired(receiver.txData.expiry, nowSec);
    return { ok: false, reason: live ? "receiver-live" : "receiver-not-cancelled" };
  }
  if (isTransactionExpired(sender.txData.expiry, nowSec) || params.prepareBufferWaived === true) {
    return { ok: true };
  }
  const preparedAtSec = params.senderPreparedAtSec ?? sender.preparedTimestamp;
  if (preparedAtSec === undefined) {
    return { ok: false, reason: "sender-prepare-time-unknown" };
  }
  if (preparedAtSec + SENDER_PREPARE_BUFFER_SEC > nowSec) {
    return { ok: false, reason: "sender-too-new" };
  }
  return { ok: true };
}

export interface DecideActionParams {
  sender?: TransferRecord;
  receiver?: TransferRecord;
  nowSec: number;
  /** The sending prepare has the sending chain's confirmations (docs/protocol.md#transfer-actions). */
  sendingConfirmationsSeen: boolean;
  /** The receiving fulfill or cancel has the receiving chain's confirmations (docs/protocol.md#transfer-actions). */
  receivingConfirmationsSeen: boolean;
  /** Block timestamp of the sending prepare; defaults to `sender.preparedTimestamp`. */
  senderPreparedAtSec?: number;
  /** The receiving chain is in our config (else ReceiverNotConfigured). */
  receivingChainConfigured: boolean;
}

/**
 * The lifecycle decision for one transfer (docs/protocol.md#transfer-states), pure. Deviations from the original, on
 * purpose:
 * - Receiver Fulfilled wins over SenderExpired (docs/protocol.md#deviation-claim-first). While the sending side is live
 *   the router fulfills it. Once it is expired the contract refuses the fulfill (#F:020) and anyone may cancel it; the
 *   router must not cancel its own claim away (the user was already paid), so it waits and alerts.
 * - A receiving side that is Prepared and expired is cancelled first, whatever the sending side's state;
 *   the sending side is cancelled only once the receiving cancel is seen (`checkSenderCancel`).
 * - No sender cancel while the receiving side is Prepared and live, or before the 780 s buffer.
 * "Expired" means `now > expiry`: the contract still allows a fulfill at `block.timestamp == expiry`.
 */
export function decideAction(params: DecideActionParams): Action {
  const { sender, receiver, nowSec } = params;
  if (
    sender !== undefined &&
    receiver !== undefined &&
    !sameHex(sender.txData.transactionId, receiver.txData.transactionId)
  ) {
    throw new ProtocolInputError("sender and receiver records belong to different transfers", {
      sender: sender.txData.transactionId,
      receiver: receiver.txData.transactionId,
    });
  }

  if (receiver?.status === "Prepared" && isTransactionExpired(receiver.txData.expiry, nowSec)) {
    return { kind: "cancel-receiver", state: "ReceiverExpired", reason: "receiver-expired" };
  }
  const receiverLive = receiver?.status === "Prepared";

  if (sender === undefined || sender.status !== "Prepared") {
    if (receiverLive) {
      // Sending side cancelled (or fulfilled without a receiving fulfill): a user fulfill here is a loss.
      return { kind: "wait", state: "ReceiverPrepared", reason: "receiver-live", alert: sender !== undefined };
    }
    return { kind: "done", state: "Completed", alert: isAnomalous(sender, receiver) };
  }

  const senderExpired = isTransactionExpired(sender.txData.expiry, nowSec);
  if (receiver?.status === "Fulfilled") {
    if (senderExpired) {
      return {
        kind: "wait",
        state: "ReceiverFulfilled",
        reason: "sender-expired-after-receiver-fulfilled",
        alert: true,
      };
    }
    if (!params.receivingConfirmationsSeen) {
      return { kind: "wait", state: "ReceiverFulfilled", reason: "awaiting-confirmations", alert: false };
    }
    return { kind: "fulfill-sender", state: "ReceiverFulfilled" };
  }
  if (receiverLive) {
    return senderExpired
      ? { kind: "wait", state: "SenderExpired", reason: "receiver-live", alert: true }
      : { kind: "wait", state: "ReceiverPrepared", reason: "awaiting-user-fulfill", alert: false };
  }
  if (senderExpired) {
    return { kind: "cancel-sender", state: "SenderExpired", reason: "sender-expired" };
  }

  if (receiver?.status === "Cancelled") {
    if (!params.receivingConfirmationsSeen) {
      return { kind: "wait", state: "ReceiverCancelled", reason: "awaiting-confirmations", alert: false };
    }
    return guardedSenderCancel(params, sender, "ReceiverCancelled", "receiver-cancelled");
  }
  if (!params.receivingChainConfigured) {
    return guardedSenderCancel(params, sender, "ReceiverNotConfigured", "receiver-not-configured");
  }
  if (!params.sendingConfirmationsSeen) {
    return { kind: "wait", state: "SenderPrepared", reason: "awaiting-confirmations", alert: false };
  }
  return { kind: "prepare-receiver", state: "SenderPrepared" };
}

function guardedSenderCancel(
  params: DecideActionParams,
  sender: TransferRecord,
  state: DerivedState,
  reason: SenderCancelReason,
): Action {
  const check = checkSenderCancel({
    sender,
    receiver: params.receiver,
    nowSec: params.nowSec,
    senderPreparedAtSec: params.senderPreparedAtSec,
  });
  if (!check.ok) {
    if (check.reason === "sender-not-prepared") {
      throw new ProtocolInputError("unreachable: sender cancel checked for a sender that is not Prepared");
    }
    // decideAction settled the receiver states first, so only the time rules refuse here.
    return { kind: "wait", state, reason: check.reason, alert: false };
  }
  return { kind: "cancel-sender", state, reason };
}

/**
 * A settled transfer whose two sides disagree: the receiving side was fulfilled while the sending side ended
 * Cancelled (the router paid without being paid), or the sending side was fulfilled while the receiving
 * side was cancelled (the user was not paid).
 */
function isAnomalous(sender: TransferRecord | undefined, receiver: TransferRecord | undefined): boolean {
  if (sender === undefined) {
    return false;
  }
  if (sender.status === "Cancelled") {
    return receiver?.status === "Fulfilled";
  }
  return sender.status === "Fulfilled" && receiver !== undefined && receiver.status !== "Fulfilled";
}

import type { RouterConfig } from "../../shared/config/types";
import { checkSenderCancel, decideAction, type DerivedState } from "../../shared/protocol/decide";
import { completionBlockOf } from "../../shared/protocol/completion-block";
import { sameInvariant } from "../../shared/protocol/digests";
import type { TransferRecord } from "../../shared/protocol/types";
import {
  verifySenderPrepare,
  type VerifyFailure,
  type VerifySenderPrepareResult,
} from "../../shared/protocol/verify-sender";
import { TX_JOB, transferKey, type SenderPrepareData, type TxJobDataByName, type TxJobName } from "../../shared/queues";
import type { ChainHead } from "../../shared/transfers/transfer-store";

/**
 * What the poller should do about one open record, decided without I/O from the records, the heads and the
 * config. The tick gathers the inputs and carries out the plan (plan-executor.ts).
 */
export type JobPlan = {
  [N in TxJobName]: { readonly name: N; readonly chainId: number; readonly data: TxJobDataByName[N] };
}[TxJobName];

export type Plan =
  | {
      readonly kind: "enqueue";
      readonly state: DerivedState;
      readonly job: JobPlan;
      /**
       * A sender cancel because the sending side fails verification relies on the router never having
       * prepared the receiving side: the executor checks that no prepare-receiver job exists for the
       * transfer before it enqueues. Such a cancel is the refund of our own refusal (`afterOwnRefusal`): sent
       * at once, without the 780 s buffer.
       */
      readonly guard?: { readonly kind: "no-prepare-job"; readonly receivingChainId: number };
    }
  | { readonly kind: "wait"; readonly state: DerivedState; readonly reason: string; readonly alert: boolean }
  | { readonly kind: "done"; readonly alert: boolean }
  /** The sending side fails verification in a way the router cannot cancel (not ours, not a sending side). */
  | { readonly kind: "refused"; readonly reason: VerifyFailure; readonly detail: string }
  /** Another poller owns this action. */
  | { readonly kind: "skip"; readonly reason: string };

export interface PlanContext {
  readonly config: RouterConfig;
  /** The poller's chain. */
  readonly chainId: number;
  /** `invariant.router`: the Router contract in router-contract mode, else the signer. */
  readonly routerAddress: string;
  /** Bids must recover to it. */
  readonly signerAddress: string;
  readonly tolerancePercent: number;
}

/** The receiving chain as the sending chain's poller sees it through the store. */
export interface ReceivingView {
  readonly head?: ChainHead;
  readonly confirmations: number;
  /** Its poller stored a complete view recently; absence of a record there can be trusted. */
  readonly fresh: boolean;
}

export interface PlanSenderParams {
  /** Prepared, on this chain, this chain being its sending chain. */
  readonly sender: TransferRecord;
  readonly receiver?: TransferRecord;
  /** This chain's latest block timestamp. */
  readonly nowSec: number;
  /** This chain's head block number. */
  readonly head: number;
  /** Undefined when the receiving chain is not configured. */
  readonly receiving?: ReceivingView;
}

/** A record on this chain whose sending chain this is (docs/protocol.md#transfer-states through decideAction). */
export function planSenderSide(ctx: PlanContext, p: PlanSenderParams): Plan {
  const { sender, receiver, nowSec } = p;
  const confirmations = chainOf(ctx, ctx.chainId).confirmations;
  const action = decideAction({
    sender,
    receiver,
    nowSec,
    sendingConfirmationsSeen: sender.txData.preparedBlockNumber + confirmations - 1 <= p.head,
    receivingConfirmationsSeen: completionConfirmed(receiver, p.receiving),
    senderPreparedAtSec: sender.preparedTimestamp,
    receivingChainConfigured: p.receiving !== undefined,
  });
  switch (action.kind) {
    case "prepare-receiver":
      return planPrepareReceiver(ctx, p);
    case "fulfill-sender":
      if (receiver?.status !== "Fulfilled") {
        return { kind: "wait", state: action.state, reason: "receiver-not-fulfilled", alert: false };
      }
      // The user's signature claims any sending transfer under this id: only the one our receiving side answers.
      if (!sameInvariant(sender.txData, receiver.txData)) {
        return { kind: "wait", state: action.state, reason: "sender-is-another-transfer", alert: true };
      }
      return enqueue(action.state, {
        name: TX_JOB.fulfillSender,
        chainId: ctx.chainId,
        data: {
          chainId: ctx.chainId,
          txData: sender.txData,
          signature: receiver.signature,
          relayerFee: receiver.relayerFee,
          callData: receiver.callData,
          receiverFulfillTransactionHash: receiver.fulfillTransactionHash,
        },
      });
    case "cancel-sender":
      // Without a receiving record, "no receiving side" is only known if that chain's view is current.
      if (receiver === undefined && p.receiving !== undefined && !p.receiving.fresh) {
        return { kind: "wait", state: action.state, reason: "receiving-view-stale", alert: false };
      }
      return enqueue(action.state, cancelSender(ctx, sender, action.reason));
    case "cancel-receiver":
      return { kind: "skip", reason: "the receiving chain's poller cancels an expired receiving side" };
    case "wait":
      return { kind: "wait", state: action.state, reason: action.reason, alert: action.alert };
    case "done":
      return { kind: "done", alert: action.alert };
  }
}

/** The receiving prepare's verification of a sending side (verify-sender.ts), with this poller's addresses. */
export function verifySender(ctx: PlanContext, sender: TransferRecord, nowSec: number): VerifySenderPrepareResult {
  return verifySenderPrepare({
    sender,
    routerSignerAddress: ctx.signerAddress,
    routerAddress: ctx.routerAddress,
    receivingTxManagerAddress: chainOf(ctx, sender.txData.receivingChainId).transactionManagerAddress,
    sendingTxManagerAddress: chainOf(ctx, ctx.chainId).transactionManagerAddress,
    swapPools: ctx.config.swapPools,
    nowSec,
    tolerancePercent: ctx.tolerancePercent,
  });
}

function planPrepareReceiver(ctx: PlanContext, p: PlanSenderParams): Plan {
  const { sender, receiver, nowSec } = p;
  const receivingChainId = sender.txData.receivingChainId;
  const verified = verifySender(ctx, sender, nowSec);
  if (verified.ok) {
    return enqueue("SenderPrepared", {
      name: TX_JOB.prepareReceiver,
      chainId: receivingChainId,
      data: { chainId: receivingChainId, sender: senderPrepareData(sender) },
    });
  }
  if (!verified.cancellable) {
    return { kind: "refused", reason: verified.reason, detail: verified.detail };
  }
  // Declined by us: no prepare of ours will follow, so the refund goes at once, like every refund of our own
  // refusal (docs/decisions.md). The 780 s buffer waits for a receiving prepare a lagging source does not show
  // yet, and only this router can make one; the executor's guard (no prepare-receiver job) and the submitter's
  // checks (the receiving chain itself, no prepare of ours in flight, the transfer's decision) exclude ours.
  const check = checkSenderCancel({
    sender,
    receiver,
    nowSec,
    senderPreparedAtSec: sender.preparedTimestamp,
    prepareBufferWaived: true,
  });
  if (!check.ok) {
    return { kind: "wait", state: "SenderPrepared", reason: `${verified.reason}: ${check.reason}`, alert: false };
  }
  return {
    kind: "enqueue",
    state: "SenderPrepared",
    job: cancelSender(ctx, sender, verified.reason, { afterOwnRefusal: true }),
    guard: { kind: "no-prepare-job", receivingChainId },
  };
}

export interface PlanReceiverParams {
  /** Prepared, on this chain, this chain being its receiving chain. */
  readonly receiver: TransferRecord;
  readonly sender?: TransferRecord;
  /** This (receiving) chain's latest block timestamp: the clock its TransactionManager checks expiry with. */
  readonly nowSec: number;
}

/**
 * A record on this chain whose receiving chain this is. This poller owns the receiving side's expiry, so an
 * expired receiving side is cancelled even while the sending chain's poller is down; everything else about
 * the transfer is the sending chain's poller's business, except alerts about this side.
 */
export function planReceiverSide(ctx: PlanContext, p: PlanReceiverParams): Plan {
  const action = decideAction({
    sender: p.sender,
    receiver: p.receiver,
    nowSec: p.nowSec,
    sendingConfirmationsSeen: false,
    receivingConfirmationsSeen: false,
    senderPreparedAtSec: p.sender?.preparedTimestamp,
    receivingChainConfigured: true,
  });
  if (action.kind === "cancel-receiver") {
    return enqueue(action.state, {
      name: TX_JOB.cancelReceiver,
      chainId: ctx.chainId,
      data: { chainId: ctx.chainId, txData: p.receiver.txData, reason: action.reason },
    });
  }
  if ((action.kind === "wait" || action.kind === "done") && action.alert) {
    return action.kind === "wait"
      ? { kind: "wait", state: action.state, reason: action.reason, alert: true }
      : { kind: "done", alert: true };
  }
  return { kind: "skip", reason: "the sending chain's poller acts on this transfer" };
}

/** The job data a receiving prepare is checked against: the sending side exactly as observed. */
export function senderPrepareData(sender: TransferRecord): SenderPrepareData {
  return {
    chainId: sender.chainId,
    txData: sender.txData,
    encryptedCallData: sender.encryptedCallData,
    encodedBid: sender.encodedBid,
    bidSignature: sender.bidSignature,
    prepareTransactionHash: sender.prepareTransactionHash,
    ...(sender.preparedTimestamp === undefined ? {} : { preparedTimestamp: sender.preparedTimestamp }),
  };
}

/** The deterministic business key of every job of a transfer. */
export function transferKeyOf(record: TransferRecord): string {
  return transferKey(record.txData.transactionId, record.txData.user);
}

function cancelSender(
  ctx: PlanContext,
  sender: TransferRecord,
  reason: string,
  opts: { readonly afterOwnRefusal?: true } = {},
): JobPlan {
  return {
    name: TX_JOB.cancelSender,
    chainId: ctx.chainId,
    data: { chainId: ctx.chainId, txData: sender.txData, reason, force: false, ...opts },
  };
}

function enqueue(state: DerivedState, job: JobPlan): Plan {
  return { kind: "enqueue", state, job };
}

function completionConfirmed(receiver: TransferRecord | undefined, view: ReceivingView | undefined): boolean {
  const block = completionBlockOf(receiver);
  if (block === undefined || view?.head === undefined) {
    return false;
  }
  return block + view.confirmations - 1 <= view.head.blockNumber;
}

function chainOf(ctx: PlanContext, chainId: number): RouterConfig["chainConfig"][string] {
  const chain = ctx.config.chainConfig[String(chainId)];
  if (!chain) {
    throw new RangeError(`chain ${chainId} is not in chainConfig`);
  }
  return chain;
}

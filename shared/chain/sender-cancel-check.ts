import { ZeroHash } from "ethers";
import { checkSenderCancel } from "../protocol/decide";
import {
  MIN_TIMEOUT_SEC,
  SENDER_PREPARE_BUFFER_SEC,
  isTransactionExpired,
  receiverExpiryFor,
} from "../protocol/expiry";
import type { TransactionData } from "../protocol/types";
import type { ChainProvider } from "./chain-provider";
import { blockTimestamp, inspectReceivingSide } from "./transfer-events";

/** Why a sender cancel must not happen (now). */
export type SenderCancelRefusal =
  /** The receiving side is prepared and not expired: the user can still be paid there. */
  | "receiver-live"
  /** The receiving side was fulfilled: the sending side is the router's claim. */
  | "receiver-fulfilled"
  /** The receiving side expired but is still prepared: cancel it first. */
  | "receiver-not-cancelled"
  /** The receiving chain shows a receiving side its events do not explain. */
  | "receiver-state-unknown"
  /** A prepare-receiver job can still run, or has a transaction the chain may not show yet. */
  | "receiver-being-prepared"
  /** The receiving chain is not configured; allowed only after the sender's expiry (`retryAtSec`). */
  | "receiver-unverifiable"
  /** docs/protocol.md#cancel-rules: the sending prepare is less than 780 s old (`retryAtSec`). */
  | "sender-too-new";

export type SenderCancelVerdict =
  | { readonly ok: true; readonly receiverState: string }
  | {
      readonly ok: false;
      readonly refusal: SenderCancelRefusal;
      readonly detail: string;
      /** Chain time after which the same check may pass (time rules only)... */
      readonly retryAtSec?: number;
      /** ...measured on the clock the check judged by (the earlier of the two chains' clocks). */
      readonly judgedAtSec?: number;
    };

export interface CheckSenderCancelOnChainParams {
  /** The sending side, already proven prepared on the sending chain (sanitation check). */
  readonly txData: TransactionData;
  readonly sendingProvider: Pick<ChainProvider, "getBlock">;
  /** Latest block timestamp of the sending chain. */
  readonly sendingNowSec: number;
  /** The receiving chain's provider and our TransactionManager there; undefined when not configured. */
  readonly receiving?: {
    readonly provider: Pick<ChainProvider, "read" | "call" | "getBlock" | "getBlockNumber">;
    readonly transactionManager: string;
  };
  /** Why a receiving prepare may be under way although the chain does not show one (see shared/coordination/in-flight). */
  readonly receiverPrepareInFlight: () => Promise<string | undefined>;
  /** The refund of a receiving prepare this router refused: no 780 s buffer (decide.ts `prepareBufferWaived`). */
  readonly waivePrepareBuffer?: boolean;
}

/**
 * The sender-cancel rules (docs/protocol.md#cancel-rules) against the chains themselves (not a subgraph), for every
 * sender cancel the router makes without `force`: the admin route checks before it enqueues, the submitter again right
 * before it sends. The rules proper are `checkSenderCancel` (shared/protocol/decide.ts); this supplies its inputs:
 * - the receiving side from `inspectReceivingSide` (an unexplained one refuses);
 * - a receiving side not on chain is only trusted when no prepare-receiver can still land (a job that can
 *   still run, or a transaction record that is not final), as long as the contract would still accept one;
 * - "now" is the earlier of the two chains' clocks, so the receiver looks live longer and the sender less
 *   expired: each skew errs toward refusing;
 * - the sending prepare's time is its block's timestamp (the variant commits to the block number).
 */
export async function checkSenderCancelOnChain(params: CheckSenderCancelOnChainParams): Promise<SenderCancelVerdict> {
  const { txData, sendingNowSec } = params;
  const senderExpired = isTransactionExpired(txData.expiry, sendingNowSec);
  if (!params.receiving) {
    return senderExpired
      ? { ok: true, receiverState: "unverifiable" }
      : {
          ok: false,
          refusal: "receiver-unverifiable",
          detail: `receiving chain ${txData.receivingChainId} is not configured; the sender can be cancelled after its expiry`,
          retryAtSec: txData.expiry,
          judgedAtSec: sendingNowSec,
        };
  }
  const senderPreparedAtSec = await blockTimestamp(params.sendingProvider, txData.preparedBlockNumber);
  const { provider, transactionManager } = params.receiving;
  const side = await inspectReceivingSide({ provider, transactionManager, sender: txData, senderPreparedAtSec });
  if (side.state === "unknown") {
    return { ok: false, refusal: "receiver-state-unknown", detail: side.detail };
  }
  const receivingNowSec = await blockTimestamp(provider, "latest");
  if (side.state === "not-prepared" && receiverPrepareCanLand(txData, receivingNowSec)) {
    const why = await params.receiverPrepareInFlight();
    if (why !== undefined) {
      return { ok: false, refusal: "receiver-being-prepared", detail: why };
    }
  }
  const check = checkSenderCancel({
    // checkSenderCancel reads only the status, expiry and prepare time of the sending record.
    sender: {
      status: "Prepared",
      chainId: txData.sendingChainId,
      txData,
      encryptedCallData: "0x",
      encodedBid: "0x",
      bidSignature: "0x",
      prepareTransactionHash: ZeroHash,
    },
    receiver: side.state === "not-prepared" ? undefined : side.record,
    nowSec: Math.min(sendingNowSec, receivingNowSec),
    senderPreparedAtSec,
    prepareBufferWaived: params.waivePrepareBuffer === true && side.state === "not-prepared",
  });
  if (check.ok) {
    return { ok: true, receiverState: side.state };
  }
  switch (check.reason) {
    case "receiver-fulfilled":
      return {
        ok: false,
        refusal: "receiver-fulfilled",
        detail: "the receiving side was fulfilled: cancelling the sender would lose the router's claim",
      };
    case "receiver-live":
      return {
        ok: false,
        refusal: "receiver-live",
        detail: `the receiving side is prepared and live until ${receiverExpiry(side)}`,
      };
    case "receiver-not-cancelled":
      return {
        ok: false,
        refusal: "receiver-not-cancelled",
        detail: `the receiving side expired at ${receiverExpiry(side)} but is not cancelled yet`,
      };
    default: {
      // sender-too-new (the two other reasons cannot occur: the record is Prepared and its time is given).
      const retryAtSec = senderPreparedAtSec + SENDER_PREPARE_BUFFER_SEC;
      return {
        ok: false,
        refusal: "sender-too-new",
        detail: `the sending prepare is less than ${SENDER_PREPARE_BUFFER_SEC} s old`,
        retryAtSec,
        judgedAtSec: Math.min(sendingNowSec, receivingNowSec),
      };
    }
  }
}

/**
 * Whether a receiving prepare of this transfer could still be mined. Ours always uses `senderExpiry − 1 d`,
 * and the contract reverts a prepare unless `expiry − block.timestamp >= MIN_TIMEOUT` (#P:013, or an
 * underflow once the expiry is past). Past that point a prepare-receiver job or transaction that never
 * landed can never land, so it no longer blocks the refund (a job that failed while its transaction was
 * pending would otherwise block it for good).
 */
function receiverPrepareCanLand(txData: TransactionData, receivingNowSec: number): boolean {
  return receivingNowSec <= receiverExpiryFor(txData.expiry) - MIN_TIMEOUT_SEC;
}

function receiverExpiry(side: Awaited<ReturnType<typeof inspectReceivingSide>>): string {
  return "record" in side ? String(side.record.txData.expiry) : "?";
}

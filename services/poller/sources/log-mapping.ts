import {
  type CancelledEvent,
  type FulfilledEvent,
  type LiquidityChangeEvent,
  type PreparedEvent,
} from "../../../shared/chain/tm-log-decoder";
import type {
  CancelledTransferRecord,
  FulfilledTransferRecord,
  PreparedTransferRecord,
} from "../../../shared/protocol/types";
import type { LiquidityEvent } from "./transfer-source";

/**
 * TransactionManager events, decoded by shared/chain/tm-log-decoder.ts, mapped to the poller's TransferRecord
 * and liquidity-event shapes. The log filters are shared/chain/router-logs.ts's.
 */

/** A LiquidityAdded / LiquidityRemoved event as the poller hands it to its sink. */
export function liquidityEventOf(event: LiquidityChangeEvent): LiquidityEvent {
  return {
    kind: event.kind === "liquidityAdded" ? "added" : "removed",
    assetId: event.assetId,
    amount: event.amount,
    blockNumber: event.blockNumber,
    transactionHash: event.transactionHash,
  };
}

/** The prepare-side fields of a record; "" where unknown (the store keeps what it has). */
export interface PrepareFields {
  readonly encryptedCallData: string;
  readonly encodedBid: string;
  readonly bidSignature: string;
  readonly prepareTransactionHash: string;
  readonly preparedTimestamp?: number;
}

export const UNKNOWN_PREPARE: PrepareFields = {
  encryptedCallData: "",
  encodedBid: "",
  bidSignature: "",
  prepareTransactionHash: "",
};

export function prepareFieldsOf(event: PreparedEvent, preparedTimestamp: number): PrepareFields {
  return {
    encryptedCallData: event.encryptedCallData,
    encodedBid: event.encodedBid,
    bidSignature: event.bidSignature,
    prepareTransactionHash: event.transactionHash,
    preparedTimestamp,
  };
}

export function preparedRecord(chainId: number, event: PreparedEvent, blockTimestamp: number): PreparedTransferRecord {
  return { status: "Prepared", chainId, txData: event.txData, ...prepareFieldsOf(event, blockTimestamp) };
}

/** A fulfill or cancel; `prepare` comes from the prepare log when the caller has it. */
export function completedRecord(
  chainId: number,
  event: FulfilledEvent | CancelledEvent,
  blockTimestamp: number,
  prepare: PrepareFields = UNKNOWN_PREPARE,
): FulfilledTransferRecord | CancelledTransferRecord {
  const common = { chainId, txData: event.txData, ...prepare };
  if (event.kind === "fulfilled") {
    return {
      ...common,
      status: "Fulfilled",
      signature: event.signature,
      relayerFee: event.relayerFee,
      callData: event.callData,
      fulfillTransactionHash: event.transactionHash,
      fulfillBlockNumber: event.blockNumber,
      fulfillTimestamp: blockTimestamp,
    };
  }
  return {
    ...common,
    status: "Cancelled",
    cancelTransactionHash: event.transactionHash,
    cancelBlockNumber: event.blockNumber,
    cancelTimestamp: blockTimestamp,
  };
}

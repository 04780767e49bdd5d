/**
 * Wire and on-chain shapes of NXTP v0 (docs/protocol.md#payloads, #subgraph, #structs). These are the JSON shapes:
 * amounts are decimal integer strings, chain ids and unix-second timestamps are numbers, everything else is a hex
 * string whose case is whatever the source sent. Code that does arithmetic converts amounts to bigint.
 */

/**
 * The bid a router signs (docs/protocol.md#auction-response). Field order is the ABI order
 * (docs/protocol.md#bid-encoding).
 */
export interface AuctionBid {
  user: string;
  router: string;
  initiator: string;
  sendingChainId: number;
  sendingAssetId: string;
  amount: string;
  receivingChainId: number;
  receivingAssetId: string;
  amountReceived: string;
  receivingAddress: string;
  transactionId: string;
  expiry: number;
  callDataHash: string;
  callTo: string;
  encryptedCallData: string;
  sendingChainTxManagerAddress: string;
  receivingChainTxManagerAddress: string;
  bidExpiry: number;
}

/** `data` of `auction.request` (docs/protocol.md#auction-request). */
export interface AuctionPayload {
  user: string;
  initiator: string;
  sendingChainId: number;
  sendingAssetId: string;
  amount: string;
  receivingChainId: number;
  receivingAssetId: string;
  receivingAddress: string;
  expiry: number;
  transactionId: string;
  encryptedCallData: string;
  callDataHash: string;
  callTo: string;
  dryRun: boolean;
}

/**
 * The part of a transfer that is identical on both chains (JSON shape, docs/protocol.md#payloads). The on-chain struct
 * order (docs/protocol.md#structs) differs: `receivingAddress` comes before `callTo` there; `digests.ts` owns that
 * order.
 */
export interface InvariantTransactionData {
  receivingChainTxManagerAddress: string;
  user: string;
  router: string;
  initiator: string;
  sendingAssetId: string;
  receivingAssetId: string;
  sendingChainFallback: string;
  callTo: string;
  receivingAddress: string;
  sendingChainId: number;
  receivingChainId: number;
  callDataHash: string;
  transactionId: string;
}

/**
 * The per-chain part (docs/protocol.md#structs). `preparedBlockNumber` is 0 once the side is fulfilled or cancelled on
 * chain.
 */
export interface VariantTransactionData {
  amount: string;
  expiry: number;
  preparedBlockNumber: number;
}

/** TransactionData as the subgraph and the contract events carry it (docs/protocol.md#payloads). */
export interface TransactionData extends InvariantTransactionData, VariantTransactionData {}

/** The address fields of a TransactionData, in the contract's order. */
export const TX_DATA_ADDRESS_FIELDS = [
  "receivingChainTxManagerAddress",
  "user",
  "router",
  "initiator",
  "sendingAssetId",
  "receivingAssetId",
  "sendingChainFallback",
  "callTo",
  "receivingAddress",
] as const satisfies ReadonlyArray<keyof TransactionData>;

/** A swap pool as configured (docs/config.md, swap pools); structurally the config's `SwapPool`. */
export interface SwapPoolLike {
  readonly assets: ReadonlyArray<{ readonly assetId: string; readonly chainId: number }>;
}

export type TransferStatus = "Prepared" | "Fulfilled" | "Cancelled";

/**
 * One side of a transfer as observed on one chain, from the subgraph (docs/protocol.md#subgraph) or from
 * TransactionManager logs (docs/protocol.md#tm-events). Both sources fill the same fields:
 * - `txData` is the TransactionData of the prepare. Its `preparedBlockNumber` is the block of the prepare
 *   transaction (the contract stores `block.number`), so the prepare block is not repeated here; it stays
 *   the prepare-time value on fulfilled and cancelled records, which is what a sender fulfill needs.
 * - `txData.amount` is the amount actually locked (less than requested for fee-on-transfer tokens).
 * - Timestamps are block timestamps in unix seconds; they are optional because a source may not have them.
 */
interface TransferRecordCommon {
  /** The chain this record lives on: `sendingChainId` for a sender record, `receivingChainId` for a receiver. */
  chainId: number;
  txData: TransactionData;
  encryptedCallData: string;
  encodedBid: string;
  bidSignature: string;
  prepareTransactionHash: string;
  /** Block timestamp of the prepare (subgraph `preparedTimestamp`, or the log's block timestamp). */
  preparedTimestamp?: number;
}

export interface PreparedTransferRecord extends TransferRecordCommon {
  status: "Prepared";
}

export interface FulfilledTransferRecord extends TransferRecordCommon {
  status: "Fulfilled";
  /** The user's fulfill signature (docs/protocol.md#user-signatures), valid on both chains. */
  signature: string;
  /** Decimal integer string. */
  relayerFee: string;
  /** Hex; `0x` when there is no call. */
  callData: string;
  fulfillTransactionHash: string;
  fulfillBlockNumber?: number;
  fulfillTimestamp?: number;
}

export interface CancelledTransferRecord extends TransferRecordCommon {
  status: "Cancelled";
  cancelTransactionHash: string;
  cancelBlockNumber?: number;
  cancelTimestamp?: number;
}

export type TransferRecord = PreparedTransferRecord | FulfilledTransferRecord | CancelledTransferRecord;

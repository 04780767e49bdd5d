import { getAddress } from "ethers";
import { RouterError, errorClass } from "../../../shared/errors";
import type { TransactionData, TransferRecord, TransferStatus } from "../../../shared/protocol/types";
import { isBytes32, isHexBytes, toSafeNumber } from "../../../shared/protocol/values";

/**
 * The `Transaction` entity of the NXTP v1-runtime subgraph (docs/protocol.md#subgraph) as the queries select it.
 * BigInts arrive as decimal strings, `user.id` / `router.id` and the address fields in lowercase.
 */
export interface SubgraphTransaction {
  readonly id: string;
  readonly status: string;
  readonly chainId: string;
  readonly preparedTimestamp?: string | null;
  readonly user: { readonly id: string };
  readonly router: { readonly id: string };
  readonly initiator: string;
  readonly receivingChainTxManagerAddress: string;
  readonly sendingAssetId: string;
  readonly receivingAssetId: string;
  readonly sendingChainFallback: string;
  readonly receivingAddress: string;
  readonly callTo: string;
  readonly sendingChainId: string;
  readonly receivingChainId: string;
  readonly callDataHash: string;
  readonly transactionId: string;
  readonly amount: string;
  readonly expiry: string;
  readonly preparedBlockNumber: string;
  readonly encryptedCallData?: string | null;
  readonly encodedBid?: string | null;
  readonly bidSignature?: string | null;
  readonly relayerFee?: string | null;
  readonly signature?: string | null;
  readonly callData?: string | null;
  readonly prepareTransactionHash?: string | null;
  readonly fulfillTransactionHash?: string | null;
  readonly cancelTransactionHash?: string | null;
}

/** The selection the poller and the test server agree on (docs/protocol.md#subgraph). */
export const SUBGRAPH_TRANSACTION_FIELDS =
  "id status chainId preparedTimestamp user { id } router { id } initiator receivingChainTxManagerAddress " +
  "sendingAssetId receivingAssetId sendingChainFallback receivingAddress callTo sendingChainId receivingChainId " +
  "callDataHash transactionId amount expiry preparedBlockNumber encryptedCallData encodedBid bidSignature " +
  "relayerFee signature callData prepareCaller fulfillCaller cancelCaller prepareTransactionHash " +
  "fulfillTransactionHash cancelTransactionHash";

/** A subgraph answered with data the router cannot trust; treated like a failed query. */
export class SubgraphDataError extends errorClass(RouterError, "SUBGRAPH_DATA_INVALID", "retriable") {}

const STATUSES: readonly TransferStatus[] = ["Prepared", "Fulfilled", "Cancelled"];

/**
 * Subgraph entity → TransferRecord, the same shape the logs source produces: checksummed addresses,
 * lowercase hashes and hex, numbers as numbers, amounts as decimal strings. Block numbers of a fulfill or
 * cancel are not in the entity; the source fills them from the receipt. Throws SubgraphDataError on any
 * malformed field rather than storing a guess.
 */
export function subgraphToRecord(t: SubgraphTransaction): TransferRecord {
  const status = t.status as TransferStatus;
  if (!STATUSES.includes(status)) {
    throw new SubgraphDataError(`unknown transaction status ${JSON.stringify(t.status)}`, { id: t.id });
  }
  const common = {
    chainId: num(t.chainId, "chainId"),
    txData: toTxData(t),
    encryptedCallData: hex(t.encryptedCallData, "encryptedCallData"),
    encodedBid: hex(t.encodedBid, "encodedBid"),
    bidSignature: hex(t.bidSignature, "bidSignature"),
    prepareTransactionHash: hash(t.prepareTransactionHash, "prepareTransactionHash"),
    preparedTimestamp:
      t.preparedTimestamp === null || t.preparedTimestamp === undefined
        ? undefined
        : num(t.preparedTimestamp, "preparedTimestamp"),
  };
  if (status === "Prepared") {
    return { ...common, status };
  }
  if (status === "Fulfilled") {
    return {
      ...common,
      status,
      signature: hex(t.signature, "signature"),
      relayerFee: decimal(t.relayerFee, "relayerFee"),
      callData: hex(t.callData, "callData"),
      fulfillTransactionHash: hash(t.fulfillTransactionHash, "fulfillTransactionHash"),
    };
  }
  return { ...common, status, cancelTransactionHash: hash(t.cancelTransactionHash, "cancelTransactionHash") };
}

function toTxData(t: SubgraphTransaction): TransactionData {
  return {
    receivingChainTxManagerAddress: address(t.receivingChainTxManagerAddress, "receivingChainTxManagerAddress"),
    user: address(t.user?.id, "user.id"),
    router: address(t.router?.id, "router.id"),
    initiator: address(t.initiator, "initiator"),
    sendingAssetId: address(t.sendingAssetId, "sendingAssetId"),
    receivingAssetId: address(t.receivingAssetId, "receivingAssetId"),
    sendingChainFallback: address(t.sendingChainFallback, "sendingChainFallback"),
    callTo: address(t.callTo, "callTo"),
    receivingAddress: address(t.receivingAddress, "receivingAddress"),
    sendingChainId: num(t.sendingChainId, "sendingChainId"),
    receivingChainId: num(t.receivingChainId, "receivingChainId"),
    callDataHash: hash(t.callDataHash, "callDataHash"),
    transactionId: hash(t.transactionId, "transactionId"),
    amount: decimal(t.amount, "amount"),
    expiry: num(t.expiry, "expiry"),
    preparedBlockNumber: num(t.preparedBlockNumber, "preparedBlockNumber"),
  };
}

function fail(field: string): never {
  throw new SubgraphDataError(`subgraph transaction field ${field} is missing or malformed`, { field });
}

function address(value: string | undefined, field: string): string {
  try {
    return getAddress(String(value));
  } catch {
    return fail(field);
  }
}

function decimal(value: string | null | undefined, field: string): string {
  return typeof value === "string" && /^[0-9]+$/.test(value) ? BigInt(value).toString() : fail(field);
}

function num(value: string | null | undefined, field: string): number {
  try {
    return toSafeNumber(BigInt(decimal(value, field)), field);
  } catch {
    return fail(field);
  }
}

function hash(value: string | null | undefined, field: string): string {
  return typeof value === "string" && isBytes32(value) ? value.toLowerCase() : fail(field);
}

function hex(value: string | null | undefined, field: string): string {
  return typeof value === "string" && isHexBytes(value) ? value.toLowerCase() : fail(field);
}

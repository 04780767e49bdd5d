import { getAddress, zeroPadValue, type Result } from "ethers";
import { contractInterface } from "../../../shared/chain/contracts";
import { toTransactionData } from "../../../shared/chain/transfer-events";
import type {
  CancelledTransferRecord,
  FulfilledTransferRecord,
  PreparedTransferRecord,
  TransactionData,
} from "../../../shared/protocol/types";
import type { LiquidityEvent } from "./transfer-source";

/**
 * Pure decoding of TransactionManager logs (PROTOCOL.md §4.2) into the TransferRecord shape. Topic layout:
 * the three Transaction* events index (user, router, transactionId), so the router is topic 2; the two
 * Liquidity* events index (router, assetId), so the router is topic 1.
 */
const tm = contractInterface("TransactionManager");
const topicOf = (name: string): string => {
  const event = tm.getEvent(name);
  if (!event) {
    throw new Error(`TransactionManager ABI has no event ${name}`);
  }
  return event.topicHash;
};

export const TM_TOPICS = {
  prepared: topicOf("TransactionPrepared"),
  fulfilled: topicOf("TransactionFulfilled"),
  cancelled: topicOf("TransactionCancelled"),
  liquidityAdded: topicOf("LiquidityAdded"),
  liquidityRemoved: topicOf("LiquidityRemoved"),
} as const;

/** eth_getLogs topic filters for one router: its transfers, and its liquidity changes. */
export function routerLogFilters(router: string): {
  transfers: Array<string | string[] | null>;
  liquidity: Array<string | string[] | null>;
} {
  const routerTopic = zeroPadValue(getAddress(router), 32).toLowerCase();
  return {
    transfers: [[TM_TOPICS.prepared, TM_TOPICS.fulfilled, TM_TOPICS.cancelled], null, routerTopic],
    liquidity: [[TM_TOPICS.liquidityAdded, TM_TOPICS.liquidityRemoved], routerTopic],
  };
}

/** The part of an ethers Log the mapping reads. */
export interface RawLog {
  readonly topics: readonly string[];
  readonly data: string;
  readonly blockNumber: number;
  readonly transactionHash: string;
  readonly index: number;
}

interface LogMeta {
  readonly blockNumber: number;
  readonly transactionHash: string;
  readonly logIndex: number;
}

export type DecodedTmEvent =
  | {
      kind: "prepared";
      meta: LogMeta;
      txData: TransactionData;
      encryptedCallData: string;
      encodedBid: string;
      bidSignature: string;
    }
  | {
      kind: "fulfilled";
      meta: LogMeta;
      txData: TransactionData;
      relayerFee: string;
      signature: string;
      callData: string;
    }
  | { kind: "cancelled"; meta: LogMeta; txData: TransactionData }
  | { kind: "liquidity"; meta: LogMeta; router: string; event: LiquidityEvent };

/**
 * Decodes one TransactionManager log; undefined for events the router does not use. Throws on a log that
 * carries a known topic but does not decode: skipping it could lose a transfer, so the tick fails loudly.
 */
export function decodeTmLog(log: RawLog): DecodedTmEvent | undefined {
  const meta: LogMeta = {
    blockNumber: log.blockNumber,
    transactionHash: log.transactionHash.toLowerCase(),
    logIndex: log.index,
  };
  const topic = log.topics[0]?.toLowerCase();
  const known = Object.values(TM_TOPICS) as string[];
  if (topic === undefined || !known.includes(topic)) {
    return undefined;
  }
  const parsed = tm.parseLog({ topics: [...log.topics], data: log.data });
  if (!parsed) {
    throw new Error(`undecodable TransactionManager log in tx ${meta.transactionHash}`);
  }
  const args = parsed.args;
  switch (topic) {
    case TM_TOPICS.prepared: {
      const prepareArgs = args.getValue("args") as Result;
      return {
        kind: "prepared",
        meta,
        txData: toTransactionData(args.getValue("txData") as Result),
        encryptedCallData: hex(prepareArgs.getValue("encryptedCallData")),
        encodedBid: hex(prepareArgs.getValue("encodedBid")),
        bidSignature: hex(prepareArgs.getValue("bidSignature")),
      };
    }
    case TM_TOPICS.fulfilled: {
      const fulfillArgs = args.getValue("args") as Result;
      return {
        kind: "fulfilled",
        meta,
        txData: toTransactionData(fulfillArgs.getValue("txData") as Result),
        relayerFee: (fulfillArgs.getValue("relayerFee") as bigint).toString(),
        signature: hex(fulfillArgs.getValue("signature")),
        callData: hex(fulfillArgs.getValue("callData")),
      };
    }
    case TM_TOPICS.cancelled:
      return {
        kind: "cancelled",
        meta,
        txData: toTransactionData((args.getValue("args") as Result).getValue("txData") as Result),
      };
    default:
      return {
        kind: "liquidity",
        meta,
        router: getAddress(String(args.getValue("router"))),
        event: {
          kind: topic === TM_TOPICS.liquidityAdded ? "added" : "removed",
          assetId: getAddress(String(args.getValue("assetId"))),
          amount: (args.getValue("amount") as bigint).toString(),
          blockNumber: meta.blockNumber,
          transactionHash: meta.transactionHash,
        },
      };
  }
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

export function prepareFieldsOf(
  event: Extract<DecodedTmEvent, { kind: "prepared" }>,
  preparedTimestamp: number,
): PrepareFields {
  return {
    encryptedCallData: event.encryptedCallData,
    encodedBid: event.encodedBid,
    bidSignature: event.bidSignature,
    prepareTransactionHash: event.meta.transactionHash,
    preparedTimestamp,
  };
}

export function preparedRecord(
  chainId: number,
  event: Extract<DecodedTmEvent, { kind: "prepared" }>,
  blockTimestamp: number,
): PreparedTransferRecord {
  return { status: "Prepared", chainId, txData: event.txData, ...prepareFieldsOf(event, blockTimestamp) };
}

/** A fulfill or cancel; `prepare` comes from the prepare log when the caller has it. */
export function completedRecord(
  chainId: number,
  event: Extract<DecodedTmEvent, { kind: "fulfilled" | "cancelled" }>,
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
      fulfillTransactionHash: event.meta.transactionHash,
      fulfillBlockNumber: event.meta.blockNumber,
      fulfillTimestamp: blockTimestamp,
    };
  }
  return {
    ...common,
    status: "Cancelled",
    cancelTransactionHash: event.meta.transactionHash,
    cancelBlockNumber: event.meta.blockNumber,
    cancelTimestamp: blockTimestamp,
  };
}

function hex(value: unknown): string {
  return String(value).toLowerCase();
}

import { getAddress, type Log, type Result } from "ethers";
import { errorMessage } from "../errors";
import type { TransactionData } from "../protocol/types";
import { toSafeNumber } from "../protocol/values";
import { contractInterface } from "./contracts";

/**
 * The one decoder of TransactionManager logs (docs/protocol.md#tm-events): the three transfer events and the two
 * liquidity events the router reads. Everything that reads these logs (the poller's log source and its
 * reconcile lookup, the sender-cancel safety check, the admin, the test subgraph, scripts) decodes here.
 *
 * The rule for a log that carries one of these events' topics but does not decode (docs/decisions.md,
 * "One TransactionManager log decoder"): the decoder never throws; it returns an `undecodable` result with the
 * log's position, and the caller reports it once and skips it. Logs never change, so throwing would stop a
 * poller at that block forever; skipping without a word could lose a transfer unnoticed.
 */

const tm = contractInterface("TransactionManager");

function topicOf(name: string): string {
  const event = tm.getEvent(name);
  if (!event) {
    throw new Error(`TransactionManager ABI has no ${name} event`);
  }
  return event.topicHash;
}

/** topic0 of each event the router reads, by the `kind` it decodes to. */
export const TM_TOPICS = {
  prepared: topicOf("TransactionPrepared"),
  fulfilled: topicOf("TransactionFulfilled"),
  cancelled: topicOf("TransactionCancelled"),
  liquidityAdded: topicOf("LiquidityAdded"),
  liquidityRemoved: topicOf("LiquidityRemoved"),
} as const;

export type TmEventKind = keyof typeof TM_TOPICS;
export type TransferEventKind = "prepared" | "fulfilled" | "cancelled";

export function transferEventTopic(kind: TransferEventKind): string {
  return TM_TOPICS[kind];
}

/** Where a log sits on chain; every decoded or undecodable result carries it. */
export interface TmLogPosition {
  readonly blockNumber: number;
  /** Lower case. */
  readonly transactionHash: string;
  readonly logIndex: number;
}

interface TransferEventBase extends TmLogPosition {
  readonly txData: TransactionData;
  /** msg.sender of the contract call (a relayer for relayed fulfills), checksummed. */
  readonly caller: string;
}

export interface PreparedEvent extends TransferEventBase {
  readonly kind: "prepared";
  readonly encryptedCallData: string;
  readonly encodedBid: string;
  readonly bidSignature: string;
}

export interface FulfilledEvent extends TransferEventBase {
  readonly kind: "fulfilled";
  readonly signature: string;
  readonly relayerFee: string;
  readonly callData: string;
}

export interface CancelledEvent extends TransferEventBase {
  readonly kind: "cancelled";
}

export type TransferEvent = PreparedEvent | FulfilledEvent | CancelledEvent;

/** LiquidityAdded / LiquidityRemoved: the router's unlocked liquidity changed outside a transfer. */
export interface LiquidityChangeEvent extends TmLogPosition {
  readonly kind: "liquidityAdded" | "liquidityRemoved";
  readonly router: string;
  readonly assetId: string;
  /** Decimal string, the asset's smallest unit. */
  readonly amount: string;
  /** LiquidityAdded's `caller` (who paid it in) or LiquidityRemoved's `recipient` (who was paid), checksummed. */
  readonly counterparty: string;
}

export type TmEvent = TransferEvent | LiquidityChangeEvent;

export function isTransferEvent(event: TmEvent): event is TransferEvent {
  return event.kind === "prepared" || event.kind === "fulfilled" || event.kind === "cancelled";
}

/** A log with one of the TM_TOPICS that does not decode into the ABI's shape (or whose values are out of range). */
export interface UndecodableTmLog extends TmLogPosition {
  readonly kind: "undecodable";
  readonly topic: string;
  readonly reason: string;
}

/** The part of an ethers Log the decoder reads. */
export type RawTmLog = Pick<Log, "topics" | "data" | "blockNumber" | "transactionHash" | "index">;

/**
 * Decodes one TransactionManager log. `undefined` for a log that is none of the five events (another event
 * of the contract, or another contract's log): not ours to read. Never throws.
 */
export function decodeTmLog(log: RawTmLog): TmEvent | UndecodableTmLog | undefined {
  const position: TmLogPosition = {
    blockNumber: log.blockNumber,
    transactionHash: log.transactionHash.toLowerCase(),
    logIndex: log.index,
  };
  const topic = log.topics[0]?.toLowerCase();
  const kind = (Object.keys(TM_TOPICS) as TmEventKind[]).find((k) => TM_TOPICS[k] === topic);
  if (topic === undefined || kind === undefined) {
    return undefined;
  }
  try {
    const parsed = tm.parseLog({ topics: [...log.topics], data: log.data });
    if (!parsed) {
      throw new Error("the ABI has no event for this topic");
    }
    return decodeArgs(kind, parsed.args, position);
  } catch (err) {
    return { kind: "undecodable", ...position, topic, reason: errorMessage(err) };
  }
}

/** Decodes a batch of logs: the events in chain order (other events dropped), and the undecodable ones apart. */
export function decodeTmLogs(logs: readonly RawTmLog[]): {
  events: TmEvent[];
  undecodable: UndecodableTmLog[];
} {
  const events: TmEvent[] = [];
  const undecodable: UndecodableTmLog[] = [];
  for (const result of logs.map(decodeTmLog)) {
    if (result?.kind === "undecodable") {
      undecodable.push(result);
    } else if (result !== undefined) {
      events.push(result);
    }
  }
  events.sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
  return { events, undecodable };
}

/** Fields for the one log line that reports an undecodable log (see the rule above). */
export function undecodableLogFields(log: UndecodableTmLog): Record<string, unknown> {
  return {
    blockNumber: log.blockNumber,
    transactionHash: log.transactionHash,
    logIndex: log.logIndex,
    topic: log.topic,
    reason: log.reason,
  };
}

function decodeArgs(kind: TmEventKind, args: Result, position: TmLogPosition): TmEvent {
  const caller = (): string => getAddress(String(args.getValue("caller")));
  switch (kind) {
    case "prepared": {
      const prepareArgs = args.getValue("args") as Result;
      return {
        ...position,
        kind,
        caller: caller(),
        txData: toTransactionData(args.getValue("txData") as Result),
        encryptedCallData: hex(prepareArgs.getValue("encryptedCallData")),
        encodedBid: hex(prepareArgs.getValue("encodedBid")),
        bidSignature: hex(prepareArgs.getValue("bidSignature")),
      };
    }
    case "fulfilled": {
      const fulfillArgs = args.getValue("args") as Result;
      return {
        ...position,
        kind,
        caller: caller(),
        txData: toTransactionData(fulfillArgs.getValue("txData") as Result),
        signature: hex(fulfillArgs.getValue("signature")),
        relayerFee: (fulfillArgs.getValue("relayerFee") as bigint).toString(),
        callData: hex(fulfillArgs.getValue("callData")),
      };
    }
    case "cancelled":
      return {
        ...position,
        kind,
        caller: caller(),
        txData: toTransactionData((args.getValue("args") as Result).getValue("txData") as Result),
      };
    case "liquidityAdded":
    case "liquidityRemoved":
      return {
        ...position,
        kind,
        router: getAddress(String(args.getValue("router"))),
        assetId: getAddress(String(args.getValue("assetId"))),
        amount: (args.getValue("amount") as bigint).toString(),
        counterparty: getAddress(String(args.getValue(kind === "liquidityAdded" ? "caller" : "recipient"))),
      };
  }
}

/**
 * The JSON shape (docs/protocol.md#payloads): checksummed addresses, lower-case hashes, decimal amount, numbers for the
 * rest.
 */
function toTransactionData(r: Result): TransactionData {
  const address = (field: string): string => getAddress(String(r.getValue(field)));
  const num = (field: string): number => toSafeNumber(r.getValue(field) as bigint, field);
  return {
    receivingChainTxManagerAddress: address("receivingChainTxManagerAddress"),
    user: address("user"),
    router: address("router"),
    initiator: address("initiator"),
    sendingAssetId: address("sendingAssetId"),
    receivingAssetId: address("receivingAssetId"),
    sendingChainFallback: address("sendingChainFallback"),
    callTo: address("callTo"),
    receivingAddress: address("receivingAddress"),
    sendingChainId: num("sendingChainId"),
    receivingChainId: num("receivingChainId"),
    callDataHash: hex(r.getValue("callDataHash")),
    transactionId: hex(r.getValue("transactionId")),
    amount: (r.getValue("amount") as bigint).toString(),
    expiry: num("expiry"),
    preparedBlockNumber: num("preparedBlockNumber"),
  };
}

function hex(value: unknown): string {
  return String(value).toLowerCase();
}

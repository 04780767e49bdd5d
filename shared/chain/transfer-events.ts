import { zeroPadValue } from "ethers";
import { RouterError, errorClass } from "../errors";
import { classifyVariant, invariantDigest, invariantOf, NOT_PREPARED_VARIANT_DIGEST } from "../protocol/digests";
import { RECEIVER_EXPIRY_MAX_WINDOW_SEC, RECEIVER_EXPIRY_OFFSET_SEC } from "../protocol/expiry";
import type { TransactionData, TransferRecord } from "../protocol/types";
import { abiAddress, abiBytes32 } from "../protocol/values";
import type { ChainProvider } from "./chain-provider";
import { readVariantTransactionData } from "./router-balances";
import {
  decodeTmLogs,
  isTransferEvent,
  transferEventTopic,
  type PreparedEvent,
  type TransferEvent,
  type TransferEventKind,
  type UndecodableTmLog,
} from "./tm-log-decoder";

/**
 * TransactionManager transfer events (docs/protocol.md#tm-events), read from logs filtered by all three indexed topics
 * (user, router, transactionId), and what they tell about one side of a transfer. Used where the router must know
 * a side's state on chain rather than from a subgraph or the poller: the sender-cancel safety check and the
 * admin's lookup of a sending-side transaction.
 */

/** Blocks per eth_getLogs request: below the 10 000-block cap common among hosted providers. */
export const LOG_CHUNK_BLOCKS = 5_000;
/** A scan needing more requests than this is refused rather than left to hammer the provider. */
export const MAX_LOG_CHUNKS = 400;
/** Chains' clocks are not in lock-step; a receiving prepare is searched from this long before the sending prepare. */
export const CLOCK_SKEW_MARGIN_SEC = 3_600;

/** The requested log range would take more than MAX_LOG_CHUNKS requests. */
export class LogRangeTooLargeError extends errorClass(RouterError, "LOG_RANGE_TOO_LARGE", "terminal") {}

export interface FindTransferEventsParams {
  readonly provider: Pick<ChainProvider, "read">;
  readonly transactionManager: string;
  readonly user: string;
  readonly router: string;
  readonly transactionId: string;
  readonly kinds: readonly TransferEventKind[];
  readonly fromBlock: number;
  readonly toBlock: number;
  /** Scanning goes from `toBlock` backwards and stops once this holds for the events found so far. */
  readonly stopWhen?: (eventsNewestFirst: readonly TransferEvent[]) => boolean;
  readonly chunkBlocks?: number;
  /** Each matching log that does not decode: skipped by the scan, reported here (tm-log-decoder.ts's rule). */
  readonly onUndecodable: (log: UndecodableTmLog) => void;
}

/**
 * Transfer events of one (user, router, transactionId) in [fromBlock, toBlock], oldest first. Scans
 * backwards in chunks because what callers look for is usually recent (a cancel after expiry), and the
 * prepare (the oldest event of a transfer) ends the scan.
 */
export async function findTransferEvents(params: FindTransferEventsParams): Promise<TransferEvent[]> {
  const chunk = params.chunkBlocks ?? LOG_CHUNK_BLOCKS;
  const span = params.toBlock - params.fromBlock + 1;
  if (span <= 0) {
    return [];
  }
  if (Math.ceil(span / chunk) > MAX_LOG_CHUNKS) {
    throw new LogRangeTooLargeError(
      `log scan of ${span} blocks exceeds ${MAX_LOG_CHUNKS} requests of ${chunk} blocks`,
      {
        fromBlock: params.fromBlock,
        toBlock: params.toBlock,
      },
    );
  }
  const topics = [
    params.kinds.map(transferEventTopic),
    zeroPadValue(abiAddress(params.user, "user"), 32),
    zeroPadValue(abiAddress(params.router, "router"), 32),
    abiBytes32(params.transactionId, "transactionId"),
  ];
  const found: TransferEvent[] = [];
  for (let hi = params.toBlock; hi >= params.fromBlock; hi -= chunk) {
    const lo = Math.max(params.fromBlock, hi - chunk + 1);
    const logs = await params.provider.read(
      (p) => p.getLogs({ address: params.transactionManager, topics, fromBlock: lo, toBlock: hi }),
      "getLogs",
    );
    const { events, undecodable } = decodeTmLogs(logs);
    undecodable.forEach(params.onUndecodable);
    found.push(...events.filter(isTransferEvent).reverse());
    if (params.stopWhen?.(found)) {
      break;
    }
  }
  return found.reverse();
}

/** The first block whose timestamp is >= `timestampSec` (binary search; head + 1 when there is none yet). */
export async function firstBlockAtOrAfter(
  provider: Pick<ChainProvider, "getBlock">,
  timestampSec: number,
  head: number,
): Promise<number> {
  let lo = 0;
  let hi = head + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if ((await blockTimestamp(provider, mid)) >= timestampSec) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

export async function blockTimestamp(
  provider: Pick<ChainProvider, "getBlock">,
  blockTag: number | "latest",
): Promise<number> {
  const block = await provider.getBlock(blockTag);
  if (!block) {
    // A provider without the block yet (behind the one that gave us its number): retriable, not a state.
    throw new BlockUnavailableError(`block ${String(blockTag)} is not available from the provider`, { blockTag });
  }
  return block.timestamp;
}

/** A block the caller knows exists was not returned (a lagging or pruned provider). */
export class BlockUnavailableError extends errorClass(RouterError, "BLOCK_UNAVAILABLE", "retriable") {}

export type ReceivingSide =
  | { readonly state: "not-prepared" }
  | { readonly state: "prepared" | "fulfilled" | "cancelled"; readonly record: TransferRecord }
  | { readonly state: "unknown"; readonly detail: string };

export interface InspectReceivingSideParams {
  readonly provider: Pick<ChainProvider, "read" | "call" | "getBlock" | "getBlockNumber">;
  /** Our configured TransactionManager on the receiving chain: the only place we would have prepared. */
  readonly transactionManager: string;
  /** The sending side's TransactionData: its invariant names the receiving side. */
  readonly sender: TransactionData;
  /** Block timestamp of the sending prepare. */
  readonly senderPreparedAtSec: number;
}

/**
 * The receiving side of a transfer as the receiving chain has it. `variantTransactionData` says whether
 * it was ever prepared; a non-zero value needs the events to tell Prepared (with its expiry) from
 * Fulfilled and Cancelled, which share the "completed" digest. Anything the events cannot explain is
 * `unknown`: callers must then refuse, never guess.
 *
 * The scan starts where a receiving prepare can first be: not before the sending prepare, and not before
 * `senderExpiry − 8 d` (our receiving expiry is `senderExpiry − 1 d` and must be < 7 d away at prepare).
 */
export async function inspectReceivingSide(params: InspectReceivingSideParams): Promise<ReceivingSide> {
  const { provider, sender } = params;
  const digest = invariantDigest(invariantOf(sender));
  const variant = await readVariantTransactionData(provider, params.transactionManager, digest);
  if (variant === NOT_PREPARED_VARIANT_DIGEST) {
    return { state: "not-prepared" };
  }
  const head = await provider.getBlockNumber();
  const earliestSec =
    Math.max(params.senderPreparedAtSec, sender.expiry - RECEIVER_EXPIRY_OFFSET_SEC - RECEIVER_EXPIRY_MAX_WINDOW_SEC) -
    CLOCK_SKEW_MARGIN_SEC;
  const fromBlock = await firstBlockAtOrAfter(provider, earliestSec, head);
  const sameTransfer = (e: TransferEvent): boolean => invariantDigest(invariantOf(e.txData)) === digest;
  const undecodable: UndecodableTmLog[] = [];
  const events = (
    await findTransferEvents({
      provider,
      transactionManager: params.transactionManager,
      user: sender.user,
      router: sender.router,
      transactionId: sender.transactionId,
      kinds: ["prepared", "fulfilled", "cancelled"],
      fromBlock,
      toBlock: head,
      stopWhen: (found) => found.some((e) => e.kind === "prepared" && sameTransfer(e)),
      onUndecodable: (log) => undecodable.push(log),
    })
  ).filter(sameTransfer);
  const [first] = undecodable;
  if (first !== undefined) {
    // A log of this (user, router, transactionId) we cannot read might be the very event that decides: refuse.
    return {
      state: "unknown",
      detail:
        `undecodable TransactionManager log of this transfer at block ${first.blockNumber}, ` +
        `tx ${first.transactionHash}, index ${first.logIndex}: ${first.reason}`,
    };
  }
  return classifyReceivingEvents(variant, events);
}

function classifyReceivingEvents(variant: string, events: readonly TransferEvent[]): ReceivingSide {
  const prepared = [...events].reverse().find((e): e is PreparedEvent => e.kind === "prepared");
  if (!prepared) {
    return { state: "unknown", detail: "the receiving side is prepared on chain but its prepare event was not found" };
  }
  const common = {
    chainId: prepared.txData.receivingChainId,
    txData: prepared.txData,
    encryptedCallData: prepared.encryptedCallData,
    encodedBid: prepared.encodedBid,
    bidSignature: prepared.bidSignature,
    prepareTransactionHash: prepared.transactionHash,
  };
  const classification = classifyVariant(variant, prepared.txData);
  if (classification === "prepared-matching") {
    return { state: "prepared", record: { ...common, status: "Prepared" } };
  }
  if (classification !== "completed") {
    return { state: "unknown", detail: `the receiving variant does not match its prepare event (${classification})` };
  }
  const done = events.find((e) => e.kind !== "prepared" && e.blockNumber >= prepared.blockNumber);
  if (done?.kind === "fulfilled") {
    return {
      state: "fulfilled",
      record: {
        ...common,
        status: "Fulfilled",
        signature: done.signature,
        relayerFee: done.relayerFee,
        callData: done.callData,
        fulfillTransactionHash: done.transactionHash,
        fulfillBlockNumber: done.blockNumber,
      },
    };
  }
  if (done?.kind === "cancelled") {
    return {
      state: "cancelled",
      record: {
        ...common,
        status: "Cancelled",
        cancelTransactionHash: done.transactionHash,
        cancelBlockNumber: done.blockNumber,
      },
    };
  }
  return {
    state: "unknown",
    detail: "the receiving side is completed on chain but no fulfill or cancel event was found",
  };
}

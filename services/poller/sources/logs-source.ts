import { getAddress, zeroPadValue, type Log } from "ethers";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import type { Logger } from "../../../shared/logging/create-logger";
import type { TransferRecord } from "../../../shared/protocol/types";
import { pollerCursorKey, transferKey } from "../../../shared/queues";
import {
  TM_TOPICS,
  UNKNOWN_PREPARE,
  completedRecord,
  decodeTmLog,
  prepareFieldsOf,
  preparedRecord,
  routerLogFilters,
  type DecodedTmEvent,
  type PrepareFields,
} from "./log-mapping";
import { SyncAbortedError, type LiquidityEvent, type SourceBatch, type StoredRecordLookup, type TransferSource } from "./transfer-source";

/** Blocks per eth_getLogs: small enough for every public RPC's range cap and response size limit. */
export const DEFAULT_MAX_RANGE_BLOCKS = 2_000;
/** First start without a cursor and without POLLER_START_BLOCK: this far back from the head (about 2 weeks at 12 s). */
export const DEFAULT_INITIAL_LOOKBACK_BLOCKS = 100_000;
const TIMESTAMP_CACHE_SIZE = 2_048;

export interface LogsSourceParams {
  readonly chainId: number;
  readonly provider: ChainProvider;
  readonly transactionManagerAddress: string;
  /** `invariant.router`: the Router contract in router-contract mode, else the signer. */
  readonly routerAddress: string;
  readonly redis: Redis;
  readonly prefix: string;
  readonly lookup: StoredRecordLookup;
  readonly logger: Logger;
  /** First block to read when no cursor is stored (env POLLER_START_BLOCK). */
  readonly startBlock?: number;
  readonly maxRangeBlocks?: number;
  readonly initialLookbackBlocks?: number;
}

/**
 * Reads the router's TransactionManager events straight from the chain. The cursor
 * (`cursor:<chainId>`, the last block whose logs are stored) moves only after a range's records were
 * handed to the sink and stored, so a crash in between re-reads the range, and the store's upsert makes
 * that harmless. Only confirmed blocks are read (SyncParams.confirmedHead), so no re-read is needed for
 * re-orgs shallower than the chain's confirmations.
 */
export function createLogsSource(p: LogsSourceParams): TransferSource {
  const maxRange = p.maxRangeBlocks ?? DEFAULT_MAX_RANGE_BLOCKS;
  const cursorKey = pollerCursorKey(p.prefix, p.chainId);
  const filters = routerLogFilters(p.routerAddress);
  const timestamps = createTimestampCache(p.provider);
  const tm = getAddress(p.transactionManagerAddress);

  const initialCursor = (head: number): number => {
    const start = p.startBlock ?? Math.max(0, head - (p.initialLookbackBlocks ?? DEFAULT_INITIAL_LOOKBACK_BLOCKS));
    p.logger.info("no log cursor stored: reading from the start block", {
      at: "poller.logs", startBlock: start, fromEnv: p.startBlock !== undefined,
    });
    return start - 1;
  };

  /** One range, clamped to the answering provider's own head so a lagging node cannot make us skip blocks. */
  const fetchRange = (from: number, to: number): Promise<{ coveredTo: number; logs: Log[] }> =>
    p.provider.read(async (provider) => {
      const end = Math.min(to, await provider.getBlockNumber());
      if (end < from) {
        return { coveredTo: from - 1, logs: [] };
      }
      const query = { address: tm, fromBlock: from, toBlock: end };
      const [transfers, liquidity] = await Promise.all([
        provider.getLogs({ ...query, topics: filters.transfers }),
        provider.getLogs({ ...query, topics: filters.liquidity }),
      ]);
      return { coveredTo: end, logs: [...transfers, ...liquidity].filter((log) => !log.removed) };
    }, "getLogs");

  const builder = createBatchBuilder({ ...p, tm, timestamps });

  return {
    name: "logs",
    isUsable: async () => true,
    sync: async ({ head, confirmedHead, signal, sink }) => {
      const stored = await p.redis.get(cursorKey);
      let cursor = stored === null ? initialCursor(head) : Number(stored);
      if (stored === null) {
        // Persisted at once: the start block is decided once, not again by every tick until a log shows up.
        await p.redis.set(cursorKey, String(cursor));
      }
      while (cursor < confirmedHead) {
        if (signal.aborted) {
          throw new SyncAbortedError();
        }
        const from = cursor + 1;
        const { coveredTo, logs } = await fetchRange(from, Math.min(from + maxRange - 1, confirmedHead));
        if (coveredTo < from) {
          break; // every provider is behind our head; the next tick continues
        }
        await sink(await builder(logs));
        await p.redis.set(cursorKey, String(coveredTo));
        cursor = coveredTo;
      }
      return { syncedBlock: Math.min(cursor, confirmedHead) };
    },
  };
}

interface BatchBuilderParams extends LogsSourceParams {
  readonly tm: string;
  readonly timestamps: (blockNumber: number) => Promise<number>;
}

/** Logs of one range → at most one record per transfer (the latest state) plus the liquidity events. */
function createBatchBuilder(p: BatchBuilderParams): (logs: readonly Log[]) => Promise<SourceBatch> {
  const prepareFieldsFor = async (
    event: Extract<DecodedTmEvent, { kind: "fulfilled" | "cancelled" }>,
    inBatch: TransferRecord | undefined,
  ): Promise<PrepareFields> => {
    if (inBatch !== undefined) {
      return inBatch; // the prepare (or an earlier completion carrying it) is in this range
    }
    const { transactionId, user, preparedBlockNumber } = event.txData;
    const stored = await p.lookup(p.chainId, transactionId, user);
    if (stored !== undefined && stored.prepareTransactionHash !== "") {
      return UNKNOWN_PREPARE; // the store keeps the prepare fields it has
    }
    // Prepared before our cursor's start: the prepare log sits in exactly one known block.
    const topics = [TM_TOPICS.prepared, pad(user), pad(p.routerAddress), transactionId];
    const found = await p.provider.read(
      (provider) => provider.getLogs({ address: p.tm, fromBlock: preparedBlockNumber, toBlock: preparedBlockNumber, topics }),
      "getLogs",
    );
    const prepared = found.map(decodeTmLog).find((e): e is Extract<DecodedTmEvent, { kind: "prepared" }> => e?.kind === "prepared");
    const timestamp = await p.timestamps(preparedBlockNumber);
    if (prepared === undefined) {
      p.logger.warn("prepare log of a settled transfer not found", {
        at: "poller.logs", transferKey: transferKey(transactionId, user), preparedBlockNumber,
      });
      return { ...UNKNOWN_PREPARE, preparedTimestamp: timestamp };
    }
    return prepareFieldsOf(prepared, timestamp);
  };

  return async (logs) => {
    const events = logs
      .map(decodeTmLog)
      .filter((e): e is DecodedTmEvent => e !== undefined)
      .sort((a, b) => a.meta.blockNumber - b.meta.blockNumber || a.meta.logIndex - b.meta.logIndex);
    const records = new Map<string, TransferRecord>();
    const liquidityEvents: LiquidityEvent[] = [];
    for (const event of events) {
      if (event.kind === "liquidity") {
        liquidityEvents.push(event.event);
        continue;
      }
      const key = transferKey(event.txData.transactionId, event.txData.user);
      const timestamp = await p.timestamps(event.meta.blockNumber);
      if (event.kind === "prepared") {
        records.set(key, preparedRecord(p.chainId, event, timestamp));
      } else {
        records.set(key, completedRecord(p.chainId, event, timestamp, await prepareFieldsFor(event, records.get(key))));
      }
    }
    return { records: [...records.values()], liquidityEvents };
  };
}

/** Block timestamps by number; a block's timestamp never changes once it is confirmed. */
function createTimestampCache(provider: ChainProvider): (blockNumber: number) => Promise<number> {
  const cache = new Map<number, number>();
  return async (blockNumber) => {
    const cached = cache.get(blockNumber);
    if (cached !== undefined) {
      return cached;
    }
    const block = await provider.getBlock(blockNumber);
    if (block === null) {
      throw new Error(`block ${blockNumber} not found`);
    }
    if (cache.size >= TIMESTAMP_CACHE_SIZE) {
      cache.delete(cache.keys().next().value as number);
    }
    cache.set(blockNumber, block.timestamp);
    return block.timestamp;
  };
}

function pad(address: string): string {
  return zeroPadValue(getAddress(address), 32).toLowerCase();
}

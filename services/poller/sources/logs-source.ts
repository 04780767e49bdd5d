import { getAddress, zeroPadValue, type JsonRpcProvider, type Log } from "ethers";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import type { Logger } from "../../../shared/logging/create-logger";
import type { TransferLookup } from "../../../shared/transfers/transfer-store";
import type { TransferRecord } from "../../../shared/protocol/types";
import { transferKey } from "../../../shared/queues";
import { pollerCursorKey } from "../../../shared/coordination/keys";
import type { FenceSource } from "../../../shared/coordination/lease";
import {
  TM_TOPICS,
  decodeTmLogs,
  isTransferEvent,
  type CancelledEvent,
  type FulfilledEvent,
  type PreparedEvent,
} from "../../../shared/chain/tm-log-decoder";
import { createAlertOnce } from "../alert-once";
import {
  UNKNOWN_PREPARE,
  completedRecord,
  liquidityEventOf,
  prepareFieldsOf,
  preparedRecord,
  type PrepareFields,
} from "./log-mapping";
import { routerLogFilters } from "../../../shared/chain/router-logs";
import { agreedBlock } from "./agreed-block";
import { probeCursor } from "./cursor-probe";
import { createLogCursorStore, type BlockCheckpoint, type StoredCursor } from "./log-cursor";
import { SyncAbortedError, type LiquidityEvent, type SourceBatch, type TransferSource } from "./transfer-source";
import { createUndecodableReporter, type ReportUndecodable } from "./undecodable-logs";
import { createTimestampCache, prefetchTimestamps } from "./block-timestamps";

/** Blocks per eth_getLogs: small enough for every public RPC's range cap and response size limit. */
export const DEFAULT_MAX_RANGE_BLOCKS = 2_000;
/** First start without a cursor and without POLLER_START_BLOCK: this far back from the head (about 2 weeks at 12 s). */
export const DEFAULT_INITIAL_LOOKBACK_BLOCKS = 100_000;

export interface LogsSourceParams {
  readonly chainId: number;
  readonly provider: ChainProvider;
  readonly transactionManagerAddress: string;
  /** `invariant.router`: the Router contract in router-contract mode, else the signer. */
  readonly routerAddress: string;
  readonly redis: Redis;
  readonly prefix: string;
  /** What the store already holds, so the source can skip work it has done before. */
  readonly lookup: TransferLookup;
  readonly logger: Logger;
  /** First block to read when no cursor is stored (env POLLER_START_BLOCK). */
  readonly startBlock?: number;
  readonly maxRangeBlocks?: number;
  readonly initialLookbackBlocks?: number;
  /** Called after a re-org rewind or a chain reset: records of this chain in the store may be stale. */
  readonly onRewind?: (why: "reorg" | "reset") => void;
  /** The poller lease: every cursor write checks it atomically (log-cursor.ts); unfenced without it. */
  readonly fence?: FenceSource;
  /** Test hook (never set in production): awaited after a range's records are stored, before its cursor save. */
  readonly beforeCursorSave?: (block: number) => Promise<void>;
}

/** A re-org deeper than every stored checkpoint rewinds this far below the cursor. */
export const MAX_REORG_REWIND_BLOCKS = 256;
/**
 * A stored cursor at most this far ahead of the head is a provider a little behind (a load-balanced backend):
 * the source waits for it without asking. Further ahead, the providers are asked whether the chain still holds
 * the cursor's blocks (cursor-probe.ts): a lagging provider is waited for too, and only a stored hash confirmed
 * missing (a chain reset or redeploy under an existing Redis, or a re-org under a lagging head) moves the cursor.
 */
export const CURSOR_AHEAD_SLACK_BLOCKS = 5;

/**
 * Reads the router's TransactionManager events straight from the chain. The cursor (`cursor:<chainId>`,
 * log-cursor.ts: the last block whose logs are stored, with its hash and a few earlier checkpoints) moves only
 * after a range's records were handed to the sink and stored, so a crash in between re-reads the range, and
 * the store's upsert makes that harmless. Only confirmed blocks are read (SyncParams.confirmedHead), and only
 * up to a block whose hash the in-sync providers agree on (agreed-block.ts). Before reading on, the stored
 * hash is checked against the chain: a re-org deeper than the confirmations rewinds to the newest checkpoint
 * still on chain. A cursor ahead of the head is a lagging provider (wait) until the providers confirm its hash
 * missing (cursor-probe.ts); then it rewinds to a checkpoint still on chain, or, when none is (a chain reset),
 * starts again from the start block. Rewind and reset call `onRewind` so the poller reconciles its open records
 * against the contract (records of orphaned blocks).
 */
export function createLogsSource(p: LogsSourceParams): TransferSource {
  const maxRange = p.maxRangeBlocks ?? DEFAULT_MAX_RANGE_BLOCKS;
  const cursors = createLogCursorStore(p.redis, pollerCursorKey(p.prefix, p.chainId), p.fence);
  const tm = getAddress(p.transactionManagerAddress);
  const resume = createCursorResume(p, cursors);
  const fetchRange = createRangeFetch(p, tm);
  const reportUndecodable = createUndecodableReporter(
    p.logger,
    createAlertOnce(p.redis, p.prefix, p.chainId),
    p.chainId,
  );
  const timestamps = createTimestampCache(p.provider);
  const builder = createBatchBuilder({ ...p, tm, timestamps: timestamps.read, reportUndecodable });
  /** The agreed block of the range starting at `from`, and which providers answered which block (RangeFetch). */
  const agreeFrom = (from: number, confirmedHead: number): AgreedRange => {
    const seen: BlocksSeen = new Map();
    const agreed = agreedBlock(p.provider, {
      from,
      target: Math.min(from + maxRange - 1, confirmedHead),
      logger: p.logger,
      seen: (rpc, block, hash) => seen.set(rpc, new Set([...(seen.get(rpc) ?? []), `${block}:${hash}`])),
    });
    agreed.catch(() => undefined); // a speculative one may be dropped unawaited; awaited, it still throws
    return { from, agreed, seen };
  };

  return {
    name: "logs",
    isUsable: async () => true,
    sync: async ({ head, confirmedHead, signal, sink }) => {
      // While the stored cursor's hash is checked against the chain, the next range's agreement is read with it:
      // both are reads, and it is used only if the cursor stands (a rewind reads the agreement again).
      let ahead: AgreedRange | undefined;
      let cursor = await resume(head, (block) => {
        ahead = block < confirmedHead ? agreeFrom(block + 1, confirmedHead) : undefined;
      });
      while (cursor < confirmedHead) {
        if (signal.aborted) {
          throw new SyncAbortedError();
        }
        const from = cursor + 1;
        const range = ahead?.from === from ? ahead : agreeFrom(from, confirmedHead);
        ahead = undefined;
        const agreed = await range.agreed;
        if (agreed === undefined) {
          break; // no block the providers agree on yet; the next tick continues
        }
        const { coveredTo, hash, timestamp, logs } = await fetchRange(from, agreed, range.seen);
        if (coveredTo < from || hash === undefined || (coveredTo === agreed.block && hash !== agreed.hash)) {
          break; // every provider is behind, or the block changed under the read: the next tick reads it again
        }
        if (timestamp !== undefined) {
          timestamps.remember(coveredTo, timestamp); // a transfer in the range's last block needs no read of its own
        }
        await sink(await builder(logs));
        await p.beforeCursorSave?.(coveredTo);
        await cursors.save({ block: coveredTo, hash });
        cursor = coveredTo;
      }
      return { syncedBlock: Math.min(cursor, confirmedHead) };
    },
  };
}

type CursorStore = ReturnType<typeof createLogCursorStore>;

/** Per provider, the `block:hash` pairs it answered while the range's agreement was read. */
type BlocksSeen = Map<JsonRpcProvider, Set<string>>;

interface AgreedRange {
  readonly from: number;
  readonly agreed: Promise<Required<BlockCheckpoint> | undefined>;
  readonly seen: BlocksSeen;
}

/**
 * Where reading resumes (the block before the next one to read): the stored cursor once it is verified against
 * the chain, else a rewind (re-org) or a start (no cursor, or a chain reset).
 */
function createCursorResume(
  p: LogsSourceParams,
  cursors: CursorStore,
): (head: number, verifying: (block: number) => void) => Promise<number> {
  const lookback = p.initialLookbackBlocks ?? DEFAULT_INITIAL_LOOKBACK_BLOCKS;

  /** The block before the first one to read: the start block if it is on chain, else head − lookback. */
  const startCursor = (head: number): number => {
    const start = p.startBlock !== undefined && p.startBlock <= head + 1 ? p.startBlock : Math.max(0, head - lookback);
    return start - 1;
  };
  const checkpointAt = async (block: number): Promise<BlockCheckpoint> =>
    block < 0 ? { block } : { block, hash: (await p.provider.getBlock(block))?.hash ?? undefined };
  const genesisHash = async (): Promise<string | undefined> => (await p.provider.getBlock(0))?.hash ?? undefined;
  let lagWarnedAt: number | undefined;

  const newestCheckpointOnChain = async (stored: StoredCursor): Promise<BlockCheckpoint | undefined> => {
    for (const checkpoint of stored.checkpoints) {
      if (
        checkpoint.block < stored.block &&
        checkpoint.hash !== undefined &&
        (await checkpointAt(checkpoint.block)).hash === checkpoint.hash
      ) {
        return checkpoint;
      }
    }
    return undefined;
  };

  return async (head, verifying) => {
    const stored = await cursors.load();
    if (stored === undefined) {
      const cursor = startCursor(head);
      p.logger.info("no log cursor stored: reading from the start block", {
        at: "poller.logs",
        startBlock: cursor + 1,
        fromEnv: p.startBlock !== undefined && p.startBlock <= head + 1,
      });
      // Persisted at once: the start block is decided once, not again by every tick until a log shows up.
      await cursors.reset(await checkpointAt(cursor), await genesisHash());
      return cursor;
    }
    if (stored.block > head + CURSOR_AHEAD_SLACK_BLOCKS) {
      // A cursor without a hash (the provider had no block at that height when it was stored) has nothing to
      // probe with: it is reset.
      const probe =
        stored.hash === undefined
          ? ({ kind: "replaced", evidence: "the stored cursor has no hash" } as const)
          : await probeCursor(p.provider, stored);
      if (probe.kind === "lagging") {
        if (lagWarnedAt !== stored.block) {
          lagWarnedAt = stored.block;
          p.logger.warn("stored log cursor is ahead of the provider's head: waiting for the provider", {
            at: "poller.logs",
            storedCursor: stored.block,
            head,
            evidence: probe.evidence,
          });
        }
        return stored.block;
      }
      if (probe.onChain !== undefined) {
        return rewind(stored, probe.onChain);
      }
      const cursor = startCursor(head);
      p.logger.error(
        "stored log cursor is ahead of the chain head: chain reset or redeployed; reading again from the start block",
        {
          at: "poller.logs",
          storedCursor: stored.block,
          head,
          startBlock: cursor + 1,
          evidence: probe.evidence,
        },
      );
      await cursors.reset(await checkpointAt(cursor), await genesisHash());
      p.onRewind?.("reset");
      return cursor;
    }
    if (stored.hash === undefined || stored.block > head) {
      return stored.block; // nothing to verify (no hash stored, or the provider is a little behind: wait for it)
    }
    verifying(stored.block); // reading on from it is likely: the caller may start on the next range meanwhile
    const onChain = (await checkpointAt(stored.block)).hash;
    if (onChain === undefined) {
      return stored.block; // a provider that does not have it yet: nothing to rewind
    }
    if (onChain === stored.hash) {
      if (stored.genesisHash === undefined) {
        // A cursor reset while the provider gave no block 0: the genesis is kept now, to tell a reset from a
        // lagging provider.
        const genesis = await genesisHash();
        if (genesis !== undefined) {
          await cursors.setGenesis(genesis);
        }
      }
      return stored.block;
    }
    return rewind(stored, await newestCheckpointOnChain(stored));
  };

  /** A re-org below the cursor: back to `back` (the newest checkpoint still on chain), else 256 blocks back. */
  async function rewind(stored: StoredCursor, back: BlockCheckpoint | undefined): Promise<number> {
    const cursor = back?.block ?? Math.max(-1, stored.block - MAX_REORG_REWIND_BLOCKS);
    p.logger.warn("re-org below the log cursor: rewinding and reading those blocks again", {
      at: "poller.logs",
      storedCursor: stored.block,
      storedHash: stored.hash,
      rewoundTo: cursor,
      checkpointMatched: back !== undefined,
    });
    await cursors.reset(back ?? (await checkpointAt(cursor)));
    p.onRewind?.("reorg");
    return cursor;
  }
}

/**
 * One range's router logs, clamped to the answering provider's own head so a lagging node cannot make us skip
 * blocks; the same provider then reports the hash (and timestamp) of the range's last block, which must be the
 * agreed one. A provider that already answered the agreed block with the agreed hash (`seen`, while the
 * agreement was read) has its head there: it is not asked for its head again, a round trip less per range.
 */
function createRangeFetch(
  p: LogsSourceParams,
  tm: string,
): (
  from: number,
  to: Required<BlockCheckpoint>,
  seen: BlocksSeen,
) => Promise<{ coveredTo: number; hash?: string; timestamp?: number; logs: Log[] }> {
  const filters = routerLogFilters(p.routerAddress);
  return (from, to, seen) =>
    p.provider.read(async (provider) => {
      const hasTo = seen.get(provider)?.has(`${to.block}:${to.hash}`) === true;
      const end = hasTo ? to.block : Math.min(to.block, await provider.getBlockNumber());
      if (end < from) {
        return { coveredTo: from - 1, logs: [] };
      }
      const query = { address: tm, fromBlock: from, toBlock: end };
      const [transfers, liquidity] = await Promise.all([
        provider.getLogs({ ...query, topics: filters.transfers }),
        provider.getLogs({ ...query, topics: filters.liquidity }),
      ]);
      const block = await provider.getBlock(end);
      return {
        coveredTo: end,
        hash: block?.hash ?? undefined,
        timestamp: block?.timestamp,
        logs: [...transfers, ...liquidity].filter((log) => !log.removed),
      };
    }, "getLogs");
}

interface BatchBuilderParams extends LogsSourceParams {
  readonly tm: string;
  readonly timestamps: (blockNumber: number) => Promise<number>;
  readonly reportUndecodable: ReportUndecodable;
}

/** Logs of one range → at most one record per transfer (the latest state) plus the liquidity events. */
function createBatchBuilder(p: BatchBuilderParams): (logs: readonly Log[]) => Promise<SourceBatch> {
  const prepareFieldsFor = async (
    event: FulfilledEvent | CancelledEvent,
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
      (provider) =>
        provider.getLogs({ address: p.tm, fromBlock: preparedBlockNumber, toBlock: preparedBlockNumber, topics }),
      "getLogs",
    );
    const decoded = decodeTmLogs(found);
    await p.reportUndecodable(decoded.undecodable);
    const prepared = decoded.events.find((e): e is PreparedEvent => e.kind === "prepared");
    const timestamp = await p.timestamps(preparedBlockNumber);
    if (prepared === undefined) {
      p.logger.warn("prepare log of a settled transfer not found", {
        at: "poller.logs",
        transferKey: transferKey(transactionId, user),
        preparedBlockNumber,
      });
      return { ...UNKNOWN_PREPARE, preparedTimestamp: timestamp };
    }
    return prepareFieldsOf(prepared, timestamp);
  };

  return async (logs) => {
    const { events, undecodable } = decodeTmLogs(logs);
    await p.reportUndecodable(undecodable);
    await prefetchTimestamps(
      p.timestamps,
      events.filter(isTransferEvent).map((event) => event.blockNumber),
    );
    const records = new Map<string, TransferRecord>();
    const liquidityEvents: LiquidityEvent[] = [];
    for (const event of events) {
      if (!isTransferEvent(event)) {
        liquidityEvents.push(liquidityEventOf(event));
        continue;
      }
      const key = transferKey(event.txData.transactionId, event.txData.user);
      const timestamp = await p.timestamps(event.blockNumber);
      if (event.kind === "prepared") {
        records.set(key, preparedRecord(p.chainId, event, timestamp));
      } else {
        records.set(key, completedRecord(p.chainId, event, timestamp, await prepareFieldsFor(event, records.get(key))));
      }
    }
    return { records: [...records.values()], liquidityEvents };
  };
}

function pad(address: string): string {
  return zeroPadValue(getAddress(address), 32).toLowerCase();
}

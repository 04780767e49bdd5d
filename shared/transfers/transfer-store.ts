import type { Redis } from "ioredis";
import { sameInvariant } from "../protocol/digests";
import type { TransferRecord, TransferStatus } from "../protocol/types";
import { transferRetentionSec } from "../protocol/retention";
import { transferKey } from "../queues";
import { chainHeadKey, openTransfersKey, transferRecordKey } from "../coordination/keys";
import { fenceArgsOf, fencedOut, type FenceSource } from "../coordination/lease";
import { FENCED_SET } from "../redis/common-scripts";
import { defineScript, reply } from "../redis/script-runner";

/**
 * The router's view of its transfers, one record per (chain, transactionId, user), shared between processes
 * through Redis: each chain's poller writes the records it observes on its chain, the pollers of other chains
 * read them (a sending chain's poller needs the receiving side), and the admin API reads them for
 * /cancel-sender. Keys (shared/coordination/keys.ts):
 * - `transfer:<chainId>:<transferKey>`: the TransferRecord as JSON;
 * - `open:<chainId>`: sorted set of the transfer keys still Prepared there, scored by expiry;
 * - `head:<chainId>`: the chain head as last seen by its poller (ChainHead as JSON).
 */
export interface TransferStore {
  /**
   * Upsert. A status only moves forward (Prepared → Fulfilled | Cancelled): an older observation is ignored
   * ("stale"), so re-reading old blocks or a lagging source can never reopen a settled transfer. Fields the
   * incoming record lacks (undefined or "") are kept from the stored one, so a fulfill seen without its
   * prepare keeps the prepare data. The record and the open index change in one atomic step.
   */
  put(record: TransferRecord): Promise<PutOutcome>;
  get(chainId: number, transactionId: string, user: string): Promise<TransferRecord | undefined>;
  /** Several records in one round trip per 500 (MGET), in the order asked; undefined where there is none. */
  getMany(sides: readonly TransferSide[]): Promise<Array<TransferRecord | undefined>>;
  /** Records still Prepared on the chain, soonest expiry first. */
  listOpen(chainId: number): Promise<TransferRecord[]>;
  setHead(chainId: number, head: ChainHeadInput): Promise<void>;
  getHead(chainId: number): Promise<ChainHead | undefined>;
}

/**
 * `conflict`: the record names another transfer (another invariant) under a stored one's (transactionId, user);
 * the stored one stays (mergeTransferRecord).
 */
/** One record's lookup by (chain, transactionId, user): what a reader that needs no more of the store takes. */
export type TransferLookup = TransferStore["get"];

export type PutOutcome = "created" | "updated" | "unchanged" | "stale" | "conflict";

/** One side of a transfer: the record of (transactionId, user) on `chainId`. */
export interface TransferSide {
  readonly chainId: number;
  readonly transactionId: string;
  readonly user: string;
}

export interface ChainHeadInput {
  readonly blockNumber: number;
  /** Timestamp of that block, unix seconds: the chain's own clock, which is what its contract compares with. */
  readonly timestamp: number;
  /** The block up to which this chain's records in the store are complete (logs read, or the subgraph's block). */
  readonly syncedBlock?: number;
  /** When the poller last confirmed this view is current; now by default. */
  readonly updatedAtMs?: number;
}

export interface ChainHead extends ChainHeadInput {
  readonly updatedAtMs: number;
}

/**
 * How long a closed record (Fulfilled or Cancelled on its chain) is kept, from the moment it closes: until
 * both sides of its transfer expired, plus a day (shared/protocol/retention.ts), then Redis drops it. Nothing
 * needs it later: the other side of the transfer was prepared before this one closed and is past its expiry by
 * then, and a re-read of old blocks (a re-org rewind: at most 256 blocks) happens within minutes. Without an
 * end the records grew with every swap for ever; with the contract's 30-day maximum for every record they held
 * Redis to about 0.75 swaps/s (docs/scaling.md). An open record never expires.
 */
export function closedTransferTtlMs(record: Pick<TransferRecord, "txData">, nowMs: number): number {
  return transferRetentionSec(record.txData.expiry, Math.floor(nowMs / 1000)) * 1000;
}

/** Compare-and-set attempts before put() gives up; only concurrent writers of one record ever need a second. */
const MAX_CAS_ATTEMPTS = 5;
const MGET_CHUNK = 500;

/** Compare-and-set of a record plus its open-index entry (shared/redis/scripts/transfer-cas.lua). */
const CAS = defineScript({
  file: "transfer-cas",
  keys: ["record", "open", "lease"],
  args: ["expected", "json", "open", "score", "member", "fenceValue", "closedTtlMs"],
  decode: reply.number,
});

export interface TransferStoreOptions {
  /**
   * The writer's lease (the chain's poller lease): put() and setHead() check it in the same script as the
   * write and throw LeaseLostError when it moved on. Readers (admin, auction) and tests leave it out.
   */
  readonly fence?: FenceSource;
}

export function createTransferStore(redis: Redis, prefix: string, options: TransferStoreOptions = {}): TransferStore {
  const { fence } = options;
  const recordKey = (chainId: number, transactionId: string, user: string): string =>
    transferRecordKey(prefix, chainId, transferKey(transactionId, user));

  const put = async (record: TransferRecord): Promise<PutOutcome> => {
    const member = transferKey(record.txData.transactionId, record.txData.user);
    const key = transferRecordKey(prefix, record.chainId, member);
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt += 1) {
      const currentJson = (await redis.get(key)) ?? "";
      const current = currentJson === "" ? undefined : parseRecord(currentJson);
      const merged = mergeTransferRecord(current, record);
      if (merged === "stale" || merged === "conflict") {
        return merged;
      }
      const mergedJson = JSON.stringify(merged);
      if (mergedJson === currentJson) {
        return "unchanged";
      }
      const f = fenceArgsOf(fence, key, "transfer record");
      const done = await CAS.run(redis, {
        keys: { record: key, open: openTransfersKey(prefix, record.chainId), lease: f.key },
        args: {
          expected: currentJson,
          json: mergedJson,
          open: merged.status === "Prepared" ? "1" : "0",
          score: merged.txData.expiry,
          member,
          fenceValue: f.value,
          closedTtlMs: closedTransferTtlMs(merged, Date.now()),
        },
      });
      if (done === -1) {
        throw fencedOut(fence, "transfer record");
      }
      if (done === 1) {
        return current === undefined ? "created" : "updated";
      }
    }
    throw new Error(`transfer record ${key} kept changing under concurrent writers`);
  };

  return {
    put,
    get: async (chainId, transactionId, user) => {
      const json = await redis.get(recordKey(chainId, transactionId, user));
      return json === null ? undefined : parseRecord(json);
    },
    getMany: async (sides) => {
      const found: Array<TransferRecord | undefined> = [];
      for (let i = 0; i < sides.length; i += MGET_CHUNK) {
        const keys = sides.slice(i, i + MGET_CHUNK).map((t) => recordKey(t.chainId, t.transactionId, t.user));
        for (const json of await redis.mget(keys)) {
          found.push(json === null ? undefined : parseRecord(json));
        }
      }
      return found;
    },
    listOpen: async (chainId) => {
      const members = await redis.zrange(openTransfersKey(prefix, chainId), 0, -1);
      const records: TransferRecord[] = [];
      for (let i = 0; i < members.length; i += MGET_CHUNK) {
        const keys = members.slice(i, i + MGET_CHUNK).map((m) => transferRecordKey(prefix, chainId, m));
        for (const json of await redis.mget(keys)) {
          const record = json === null ? undefined : parseRecord(json);
          // The index and the record change together; a non-Prepared record here would be a foreign write.
          if (record?.status === "Prepared") {
            records.push(record);
          }
        }
      }
      return records;
    },
    setHead: async (chainId, head) => {
      const value: ChainHead = { ...head, updatedAtMs: head.updatedAtMs ?? Date.now() };
      const key = chainHeadKey(prefix, chainId);
      const f = fenceArgsOf(fence, key, "chain head");
      const call = { keys: { target: key, lease: f.key }, args: { value: JSON.stringify(value), fenceValue: f.value } };
      if (!(await FENCED_SET.run(redis, call))) {
        throw fencedOut(fence, "chain head");
      }
    },
    getHead: async (chainId) => {
      const json = await redis.get(chainHeadKey(prefix, chainId));
      return json === null ? undefined : (JSON.parse(json) as ChainHead);
    },
  };
}

const STATUS_RANK: Readonly<Record<TransferStatus, number>> = { Prepared: 0, Fulfilled: 1, Cancelled: 1 };

/**
 * The record to store when `incoming` is observed while `existing` is stored, or "stale" to keep `existing`.
 * Fulfilled and Cancelled exclude each other on chain; if both are ever seen, the first one stays.
 * "conflict" keeps `existing` too: `incoming` is another transfer under the same (transactionId, user) (another
 * invariant, which the contract accepts). The record the router first saw, verified and acted on stays the one
 * it acts on: replacing it would make the router claim the other transfer, 1 wei, with the user's signature.
 */
export function mergeTransferRecord(
  existing: TransferRecord | undefined,
  incoming: TransferRecord,
): TransferRecord | "stale" | "conflict" {
  if (existing === undefined) {
    return incoming;
  }
  if (!sameInvariant(existing.txData, incoming.txData)) {
    return "conflict";
  }
  const from = STATUS_RANK[existing.status];
  const to = STATUS_RANK[incoming.status];
  if (to < from || (to === from && incoming.status !== existing.status)) {
    return "stale";
  }
  return { ...existing, ...knownFields(incoming) } as TransferRecord;
}

/** The fields of a record that carry a value: undefined and "" mean "this observation does not know". */
function knownFields(record: TransferRecord): Partial<TransferRecord> {
  return Object.fromEntries(
    Object.entries(record).filter(([, value]) => value !== undefined && value !== ""),
  ) as Partial<TransferRecord>;
}

function parseRecord(json: string): TransferRecord {
  return JSON.parse(json) as TransferRecord;
}

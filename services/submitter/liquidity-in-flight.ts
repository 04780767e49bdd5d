import type { Redis } from "ioredis";
import { RouterError, errorClass } from "../../shared/errors";
import { liquidityHoldsKey } from "../../shared/coordination/keys";
import type { ScriptClient } from "../../shared/redis/script-runner";
import {
  AGAIN,
  createFencedVersionedHash,
  type FencedVersionedHash,
  type VersionedHashChange,
} from "./fenced-versioned-hash";
import type { FenceSource } from "./send/fence";
import type { TxRecord, TxRecordStore } from "./send/tx-record";

/**
 * Liquidity our sent-but-unmined transactions will take from the router's unlocked balance: receiving prepares
 * and withdrawals (remove-liquidity). The chain's balance does not show them until they are mined, and an RPC
 * that runs eth_estimateGas against `latest` does not either, so two jobs could both pass and the second
 * revert on chain (#P:018, after its transfer decision was claimed). Each such job holds its amount from its
 * liquidity check until its transaction is mined; a check passes only if the balance net of the other jobs'
 * holds covers it.
 *
 * Kept in Redis (shared/coordination/keys.ts liquidityHoldsKey), one hash per (chain, signer), so a new sender lease
 * holder sees the holds of the transactions it resumes. Only the lease holder writes the hash: it sits on a
 * fenced versioned hash (fenced-versioned-hash.ts: an in-memory mirror per lease term, each change one fenced
 * compare-and-set), so two checks cannot both pass, and a deposed holder writes nothing. A hold's transaction is
 * read through the send records' store (send/tx-record.ts). With `redis.minReplicas` the broadcast a hold guards waits until replicas have it (send/attempts.ts
 * broadcastAttempt; the holds share the job's connection).
 *
 * A hold counts against balances read *before* its transaction was mined: it is marked with its mined block
 * (`minedBlock`) rather than deleted, and only a check whose balance was read at or after that block drops it.
 * Deleting at once would let a check whose balance was read just before the mining count that amount nowhere.
 */
export interface LiquidityHold {
  readonly jobId: string;
  /** Lowercase. */
  readonly assetId: string;
  /** Wei, decimal string. */
  readonly amount: string;
  /** The key of the job's transaction record (send/tx-record.ts keyOf); the record is read by jobId. */
  readonly recordKey: string;
  /** The sender lease term that wrote the hold. */
  readonly term: number;
  readonly atMs: number;
  /** The block the job's transaction was seen mined in (or a block at or after it). */
  readonly minedBlock?: number;
}

export type HoldCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly balance: bigint; readonly balanceBlock: number; readonly heldByOthers: bigint };

/** The router's unlocked balance of an asset, read at a fixed block. */
export interface BalanceAt {
  readonly balance: bigint;
  readonly block: number;
}

/** One job's side of the holds (the processor builds it per job). */
export interface JobLiquidity {
  /**
   * Holds `amount` if `balance - holds of other jobs` covers it, atomically. `readBalance` is called again if
   * the balance it gave is older than a mined hold already dropped (its amount would otherwise count nowhere).
   */
  checkAndHold(p: { assetId: string; amount: bigint; readBalance: () => Promise<BalanceAt> }): Promise<HoldCheck>;
  /** The job's transaction is mined at `blockNumber`: balances read from that block on show it. */
  markMined(blockNumber: number): Promise<void>;
  /** A transaction rebuilt at a new nonce (the old nonce was taken by another): the hold counts again. */
  unmarkMined(): Promise<void>;
  /**
   * At the end of a run: drops the hold unless the job's transaction may still be mined (record `sending`);
   * a confirmed record marks it mined at the record's block.
   */
  settle(): Promise<void>;
}

export interface LiquidityHolds {
  forJob(jobId: string): JobLiquidity;
  /**
   * Run by a new sender lease holder before its worker starts (no job of its own runs yet): every hold without
   * a record is dropped (its run died before persisting; the job checks again when it resumes), a finished
   * record's hold is marked mined, a `sending` record whose nonce the chain has used is marked mined at
   * `headBlock` (mined, or replaced by another transaction). Holds of transactions still pending stay.
   */
  reconcile(chain: { minedNonceCount: number; headBlock: number }): Promise<ReconcileResult>;
  list(): Promise<LiquidityHold[]>;
}

export interface ReconcileResult {
  readonly kept: number;
  readonly marked: number;
  readonly dropped: number;
}

/** The holds kept changing under a concurrent writer, or a balance stayed below dropped holds; the job parks. */
export class LiquidityHoldsBusyError extends errorClass(RouterError, "LIQUIDITY_HOLDS_BUSY", "retriable") {}

/**
 * A hold with no transaction record this old was left by a run that ended without settling it (a Redis error
 * at the end of the run): a run takes seconds from its check to persisting its transaction, so a check drops it.
 */
export const ORPHAN_HOLD_MS = 10 * 60_000;
/**
 * Last resort, refreshed by every write: the hash lives while its chain's sender writes to it. A chain with no
 * check, mining or takeover for a week has no running sender, and a hold left from then describes a
 * transaction long mined or dropped (bumps and the nonce-gap filler settle every nonce well within that).
 */
export const HOLDS_TTL_MS = 7 * 24 * 3600 * 1000;
/** A refused write means another writer (a second instance under the same term cannot exist): a few suffice. */
const MAX_TRIES = 20;
/** Highest block at which marked holds were dropped: a balance read before it cannot be checked any more. */
const DROPPED_BELOW = "dropped-below";

type Change<T> = VersionedHashChange<LiquidityHold, T>;

export function createLiquidityHolds(params: {
  redis: Pick<Redis, "hgetall"> & ScriptClient;
  prefix: string;
  chainId: number;
  signerAddress: string;
  /** The chain's send records: what a hold's transaction did. */
  records: HoldRecords;
  /** The sender lease (send/fence.ts; a submitter always passes it); without it writes are not fenced. */
  fence?: FenceSource;
}): LiquidityHolds {
  const { chainId, records } = params;
  const store = createFencedVersionedHash<LiquidityHold>({
    redis: params.redis,
    key: liquidityHoldsKey(params.prefix, chainId, params.signerAddress),
    idOf: (hold) => hold.jobId,
    watermarkField: DROPPED_BELOW,
    ttlMs: HOLDS_TTL_MS,
    maxTries: MAX_TRIES,
    what: "liquidity holds",
    busy: () =>
      new LiquidityHoldsBusyError(`liquidity holds of chain ${chainId} kept changing: ${MAX_TRIES} tries`, { chainId }),
    fence: params.fence,
  });

  return {
    list: async () => [...(await store.read()).entries.values()],
    forJob: (jobId) => createJobLiquidity(jobId, { store, records, chainId }),
    reconcile: async (chain) => {
      // A new term: whatever this process remembers may be older than the previous holder's writes.
      store.forget();
      return store.mutate(
        async (m) => {
          const loaded = new Map<string, TxRecord | undefined>();
          for (const hold of m.entries.values()) {
            if (hold.minedBlock === undefined) {
              loaded.set(hold.jobId, await records.load(hold.jobId));
            }
          }
          return loaded;
        },
        (m, _term, loaded) => {
          const set: LiquidityHold[] = [];
          const del: string[] = [];
          let kept = 0;
          for (const hold of m.entries.values()) {
            if (hold.minedBlock !== undefined) {
              kept += 1;
              continue;
            }
            if (!loaded.has(hold.jobId)) {
              return AGAIN;
            }
            const record = loaded.get(hold.jobId);
            const minedBlock = minedBlockOf(record, chain);
            if (!record || record.status === "reverted") {
              del.push(hold.jobId);
            } else if (minedBlock !== undefined) {
              set.push({ ...hold, minedBlock });
            } else {
              kept += 1;
            }
          }
          return { set, del, result: { kept, marked: set.length, dropped: del.length } };
        },
      );
    },
  };
}

type HoldsStore = FencedVersionedHash<LiquidityHold>;
type HoldRecords = Pick<TxRecordStore, "load" | "exists" | "keyOf">;

/** One job's side of the holds: its check, its mined marks and its settling, each one change of the store. */
function createJobLiquidity(
  jobId: string,
  p: { store: HoldsStore; records: HoldRecords; chainId: number },
): JobLiquidity {
  const { store, records, chainId } = p;
  const recordKey = records.keyOf(jobId);
  const updateOwn = (fn: (hold: LiquidityHold) => LiquidityHold): Promise<void> =>
    store.mutate(
      async () => undefined,
      (m) => {
        const own = m.entries.get(jobId);
        const next = own ? fn(own) : undefined;
        return { set: next && next !== own ? [next] : [], result: undefined };
      },
    );
  return {
    checkAndHold: async ({ assetId, amount, readBalance }) => {
      const asset = assetId.toLowerCase();
      let at = await readBalance();
      return store.mutate(
        async (m) => {
          // Holds mined at or below droppedBelow are gone: this balance would count them nowhere.
          if (at.block < m.watermark) {
            at = await readBalance();
          }
          if (at.block < m.watermark) {
            throw new LiquidityHoldsBusyError("the balance was read below the block of holds already dropped", {
              chainId,
              balanceBlock: at.block,
              droppedBelow: m.watermark,
            });
          }
          const nowMs = Date.now();
          return { nowMs, orphans: await orphansIn(records, m.entries.values(), nowMs) };
        },
        (m, term, { nowMs, orphans }): Change<HoldCheck> | typeof AGAIN => {
          const droppedBelow = m.watermark;
          if (at.block < droppedBelow) {
            return AGAIN;
          }
          const del: string[] = [];
          let heldByOthers = 0n;
          for (const hold of m.entries.values()) {
            if (hold.jobId === jobId) {
              continue;
            }
            if (hold.minedBlock !== undefined && hold.minedBlock <= at.block) {
              del.push(hold.jobId);
            } else if (orphans.has(hold.jobId) && isOld(hold, nowMs)) {
              del.push(hold.jobId);
            } else if (hold.assetId === asset) {
              heldByOthers += BigInt(hold.amount);
            }
          }
          const watermark = del.length > 0 ? Math.max(droppedBelow, at.block) : undefined;
          if (at.balance - heldByOthers < amount) {
            return {
              del,
              watermark,
              result: { ok: false, balance: at.balance, balanceBlock: at.block, heldByOthers },
            };
          }
          const hold: LiquidityHold = {
            jobId,
            assetId: asset,
            amount: amount.toString(),
            recordKey,
            term,
            atMs: nowMs,
          };
          return { set: [hold], del, watermark, result: { ok: true } };
        },
      );
    },
    markMined: (blockNumber) =>
      updateOwn((hold) => (hold.minedBlock === blockNumber ? hold : { ...hold, minedBlock: blockNumber })),
    unmarkMined: () =>
      updateOwn((hold) => {
        if (hold.minedBlock === undefined) {
          return hold;
        }
        const { minedBlock: _mined, ...unmarked } = hold;
        return unmarked;
      }),
    settle: () =>
      store.mutate(
        async (m) => (m.entries.has(jobId) ? records.load(jobId) : undefined),
        (m, _term, record): Change<undefined> => {
          const own = m.entries.get(jobId);
          if (!own) {
            return { result: undefined };
          }
          if (!record) {
            // Nothing was persisted, so nothing can be mined; unless a record appears meanwhile (guard).
            return { del: [jobId], guardAbsent: recordKey, result: undefined };
          }
          if (record.status === "reverted") {
            return { del: [jobId], result: undefined };
          }
          if (record.status === "confirmed" && own.minedBlock === undefined && record.result) {
            return { set: [{ ...own, minedBlock: record.result.blockNumber }], result: undefined };
          }
          return { result: undefined };
        },
      ),
  };
}

/** Holds that look left behind (no mined block, old) and have no transaction record. */
async function orphansIn(
  records: HoldRecords,
  holds: Iterable<LiquidityHold>,
  nowMs: number,
): Promise<ReadonlySet<string>> {
  const orphans = new Set<string>();
  for (const hold of holds) {
    if (isOld(hold, nowMs) && !(await records.exists(hold.jobId))) {
      orphans.add(hold.jobId);
    }
  }
  return orphans;
}

/** A hold with no mined block older than ORPHAN_HOLD_MS: dropped if it has no transaction record. */
function isOld(hold: LiquidityHold, nowMs: number): boolean {
  return hold.minedBlock === undefined && nowMs - hold.atMs > ORPHAN_HOLD_MS;
}

/** The block a record's transaction is known mined at or before, if it is; a used nonce counts as mined. */
function minedBlockOf(
  record: TxRecord | undefined,
  chain: { minedNonceCount: number; headBlock: number },
): number | undefined {
  if (record?.status === "confirmed") {
    return record.result?.blockNumber ?? chain.headBlock;
  }
  if (record?.status === "sending" && record.nonce >= 0 && record.nonce < chain.minedNonceCount) {
    return chain.headBlock;
  }
  return undefined;
}

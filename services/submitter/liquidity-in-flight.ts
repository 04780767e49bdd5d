import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Redis } from "ioredis";
import { RouterError } from "../../shared/errors";
import { liquidityHoldsKey, txRecordKey } from "../../shared/queues";
import { defineScript, reply, type ScriptClient } from "../../shared/redis/script-runner";
import { senderFenceArgs, senderFencedOut, type FenceSource } from "./send/fence";
import type { TxRecord } from "./send/tx-record";

/**
 * Liquidity our sent-but-unmined transactions will take from the router's unlocked balance: receiving prepares
 * and withdrawals (remove-liquidity). The chain's balance does not show them until they are mined, and an RPC
 * that runs eth_estimateGas against `latest` does not either, so two jobs could both pass and the second
 * revert on chain (#P:018, after its transfer decision was claimed). Each such job holds its amount from its
 * liquidity check until its transaction is mined; a check passes only if the balance net of the other jobs'
 * holds covers it.
 *
 * Kept in Redis (shared/queues/keys.ts liquidityHoldsKey), one hash per (chain, signer), so a new sender lease
 * holder sees the holds of the transactions it resumes. Only the lease holder writes the hash, so the holder
 * keeps a mirror of it in memory, read once per lease term: a job decides against the mirror (no I/O between
 * deciding and sending the write, so the process's jobs are serialised without a lock) and its write is a
 * compare-and-set on the hash's `version` token, fenced by the sender lease in the same Lua step. The writes of
 * one process are pipelined on one connection, each expecting the token the previous one set; a write refused
 * for any reason (another writer, the guard, the fence) leaves the mirror behind Redis, so it is read again and
 * the refused jobs decide again. Two checks cannot both pass, and a deposed holder writes nothing. A change costs
 * one round trip whatever the number of holds (the whole-hash read per change with a shared numeric version made
 * every write invalidate every other job's snapshot: 500 jobs in flight retried 23 times each, 4.8 tx/s).
 * With `redis.minReplicas` the broadcast a hold guards waits until replicas have it (send/attempts.ts
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
  /** The job's transaction record (services/submitter/send/tx-record.ts): what reconcile reads. */
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
export class LiquidityHoldsBusyError extends RouterError {
  readonly code = "LIQUIDITY_HOLDS_BUSY";
  readonly retriable = true;
}

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
const VERSION = "version";
/** Highest block at which marked holds were dropped: a balance read before it cannot be checked any more. */
const DROPPED_BELOW = "dropped-below";

/**
 * One change of the hash (shared/redis/scripts/liquidity-holds-write.lua; its field names are VERSION and
 * DROPPED_BELOW): 1, or -1 on a version conflict, -2 when the fence does not hold, -3 when the guard refused.
 */
const WRITE = defineScript({
  file: "liquidity-holds-write",
  keys: ["holds", "lease", "guard"],
  args: ["fenceValue", "expected", "version", "ttlMs", "guardMode", "droppedBelow", "setCount"],
  restArgs: true,
  decode: reply.number,
});

/** The hash as this process last wrote or read it. */
interface Mirror {
  /** The lease term it was read in: a new term reads the hash again (another holder may have written). */
  readonly term: number;
  version: string;
  droppedBelow: number;
  readonly holds: Map<string, LiquidityHold>;
}

interface Change<T> {
  readonly set?: readonly LiquidityHold[];
  readonly del?: readonly string[];
  readonly droppedBelow?: number;
  /** Write only if this key does not exist (a job's transaction record). */
  readonly guardAbsent?: string;
  readonly result: T;
}

/** Returned by a decision whose inputs (read before it) are out of date: they are read again. */
const AGAIN = Symbol("again");

export function createLiquidityHolds(params: {
  redis: Pick<Redis, "hgetall" | "hget" | "exists"> & ScriptClient;
  prefix: string;
  chainId: number;
  signerAddress: string;
  /** The sender lease (send/fence.ts; a submitter always passes it); without it writes are not fenced. */
  fence?: FenceSource;
}): LiquidityHolds {
  const { redis, prefix, chainId } = params;
  const key = liquidityHoldsKey(prefix, chainId, params.signerAddress);
  const recordKeyOf = (jobId: string): string => txRecordKey(prefix, chainId, jobId);
  /** Unique per instance, so no other writer can set a token this instance expects. */
  const writer = randomUUID();
  let writes = 0;
  /** The mirror of the current term (being read, or read); undefined after a refused write. */
  let loaded: { readonly term: number; readonly mirror: Promise<Mirror> } | undefined;

  const read = async (term: number): Promise<Mirror> => {
    const raw = await redis.hgetall(key);
    const holds = new Map<string, LiquidityHold>();
    for (const [field, value] of Object.entries(raw)) {
      if (field !== VERSION && field !== DROPPED_BELOW) {
        holds.set(field, JSON.parse(value) as LiquidityHold);
      }
    }
    return { term, version: raw[VERSION] ?? "", droppedBelow: Number(raw[DROPPED_BELOW] ?? -1), holds };
  };

  /** The mirror for `term`: read from Redis once per term, and again after any refused write. */
  const mirrorOf = (term: number): { readonly term: number; readonly mirror: Promise<Mirror> } => {
    if (loaded === undefined || loaded.term !== term) {
      const entry = { term, mirror: read(term) };
      loaded = entry;
      entry.mirror.catch(() => {
        if (loaded === entry) loaded = undefined;
      });
    }
    return loaded;
  };

  /**
   * One change: `prepare` does the I/O the decision needs (outside the serialised part), `decide` computes the
   * change from the mirror synchronously, the mirror takes it at once (the next job decides on it) and the write
   * goes out behind the earlier ones. A refused write drops the mirror; the job reads, prepares and decides again.
   */
  const mutate = async <P, T>(
    prepare: (m: Mirror) => Promise<P>,
    decide: (m: Mirror, term: number, prepared: P) => Change<T> | typeof AGAIN,
  ): Promise<T> => {
    for (let tries = 1; tries <= MAX_TRIES; tries += 1) {
      const entry = mirrorOf(senderFenceArgs(params.fence, key, "liquidity holds").fence?.term ?? 0);
      const m = await entry.mirror;
      const prepared = await prepare(m);
      // From here to the eval call nothing awaits: no other job of this process decides in between.
      const fenced = senderFenceArgs(params.fence, key, "liquidity holds");
      if (loaded !== entry || (fenced.fence?.term ?? 0) !== m.term) {
        continue;
      }
      const change = decide(m, m.term, prepared);
      if (change === AGAIN) {
        continue;
      }
      const sets = (change.set ?? []).map((h) => [h.jobId, JSON.stringify(h)]);
      const del = change.del ?? [];
      if (sets.length === 0 && del.length === 0 && change.droppedBelow === undefined) {
        return change.result;
      }
      const expected = m.version;
      writes += 1;
      m.version = `${writer}:${writes}`;
      for (const h of change.set ?? []) m.holds.set(h.jobId, h);
      for (const jobId of del) m.holds.delete(jobId);
      m.droppedBelow = change.droppedBelow ?? m.droppedBelow;
      const found = await WRITE.run(redis, {
        keys: { holds: key, lease: fenced.key, guard: change.guardAbsent ?? key },
        args: {
          fenceValue: fenced.value,
          expected,
          version: m.version,
          ttlMs: HOLDS_TTL_MS,
          guardMode: change.guardAbsent ? "absent" : "",
          droppedBelow: change.droppedBelow === undefined ? "" : String(change.droppedBelow),
          setCount: sets.length,
        },
        restArgs: [...sets.flat(), ...del],
      }).catch((err: unknown) => {
        // Applied or not, unknown: the next change reads the hash again.
        if (loaded === entry) loaded = undefined;
        throw err;
      });
      if (found === 1) {
        return change.result;
      }
      // Refused: Redis no longer matches the mirror (nor any write queued behind this one).
      if (loaded === entry) {
        loaded = undefined;
      }
      if (found === -2) {
        throw senderFencedOut(params.fence, "liquidity holds");
      }
      if (found === -1) {
        // Another writer: spread out before reading again.
        await sleep(Math.floor(Math.random() * 5));
      }
    }
    throw new LiquidityHoldsBusyError(`liquidity holds of chain ${chainId} kept changing: ${MAX_TRIES} tries`, {
      chainId,
    });
  };
  const nothing = async (): Promise<undefined> => undefined;

  return {
    list: async () => [...(await read(0)).holds.values()],
    forJob: (jobId) => createJobLiquidity(jobId),
    reconcile: async (chain) => {
      // A new term: whatever this process remembers may be older than the previous holder's writes.
      loaded = undefined;
      return mutate(
        async (m) => {
          const records = new Map<string, TxRecord | undefined>();
          for (const hold of m.holds.values()) {
            if (hold.minedBlock === undefined) {
              records.set(hold.jobId, await loadRecord(hold.recordKey));
            }
          }
          return records;
        },
        (m, _term, records) => {
          const set: LiquidityHold[] = [];
          const del: string[] = [];
          let kept = 0;
          for (const hold of m.holds.values()) {
            if (hold.minedBlock !== undefined) {
              kept += 1;
              continue;
            }
            if (!records.has(hold.jobId)) {
              return AGAIN;
            }
            const record = records.get(hold.jobId);
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

  async function loadRecord(recordKey: string): Promise<TxRecord | undefined> {
    const json = await redis.hget(recordKey, "record");
    return json === null ? undefined : (JSON.parse(json) as TxRecord);
  }

  /** Holds that look left behind (no mined block, old) and have no transaction record. */
  async function orphansIn(m: Mirror, nowMs: number): Promise<ReadonlySet<string>> {
    const orphans = new Set<string>();
    for (const hold of m.holds.values()) {
      if (isOld(hold, nowMs) && (await redis.exists(hold.recordKey)) === 0) {
        orphans.add(hold.jobId);
      }
    }
    return orphans;
  }

  function createJobLiquidity(jobId: string): JobLiquidity {
    const recordKey = recordKeyOf(jobId);
    const updateOwn = (fn: (hold: LiquidityHold) => LiquidityHold): Promise<void> =>
      mutate(nothing, (m) => {
        const own = m.holds.get(jobId);
        const next = own ? fn(own) : undefined;
        return { set: next && next !== own ? [next] : [], result: undefined };
      });
    return {
      checkAndHold: async ({ assetId, amount, readBalance }) => {
        const asset = assetId.toLowerCase();
        let at = await readBalance();
        return mutate(
          async (m) => {
            // Holds mined at or below droppedBelow are gone: this balance would count them nowhere.
            if (at.block < m.droppedBelow) {
              at = await readBalance();
            }
            if (at.block < m.droppedBelow) {
              throw new LiquidityHoldsBusyError("the balance was read below the block of holds already dropped", {
                chainId,
                balanceBlock: at.block,
                droppedBelow: m.droppedBelow,
              });
            }
            const nowMs = Date.now();
            return { nowMs, orphans: await orphansIn(m, nowMs) };
          },
          (m, term, { nowMs, orphans }): Change<HoldCheck> | typeof AGAIN => {
            if (at.block < m.droppedBelow) {
              return AGAIN;
            }
            const del: string[] = [];
            let heldByOthers = 0n;
            for (const hold of m.holds.values()) {
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
            const droppedBelow = del.length > 0 ? Math.max(m.droppedBelow, at.block) : undefined;
            if (at.balance - heldByOthers < amount) {
              return {
                del,
                droppedBelow,
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
            return { set: [hold], del, droppedBelow, result: { ok: true } };
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
        mutate(
          async (m) => (m.holds.has(jobId) ? loadRecord(recordKey) : undefined),
          (m, _term, record): Change<undefined> => {
            const own = m.holds.get(jobId);
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

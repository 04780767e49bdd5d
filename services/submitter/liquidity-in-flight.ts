import { setTimeout as sleep } from "node:timers/promises";
import type { Redis } from "ioredis";
import { RouterError } from "../../shared/errors";
import { liquidityHoldsKey, txRecordKey } from "../../shared/queues";
import { fenceCheckLua, senderFenceArgs, senderFencedOut, type FenceSource } from "./send/fence";
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
 * holder sees the holds of the transactions it resumes. Every write is a compare-and-set on the hash's
 * `version`, fenced by the sender lease in the same Lua step: two concurrent checks cannot both pass, and a
 * deposed holder writes nothing. With `redis.minReplicas` the broadcast a hold guards waits until replicas have
 * it (send/attempts.ts broadcastAttempt; the holds share the job's connection).
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

/** The compare-and-set could not get through (many concurrent writers); the job parks and checks again. */
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
const MAX_CAS_TRIES = 100;
const VERSION = "version";
/** Highest block at which marked holds were dropped: a balance read before it cannot be checked any more. */
const DROPPED_BELOW = "dropped-below";

// KEYS: holds, fence key, guard key. ARGV: fence value, expected version, ttl, guard ("absent": refuse if the
// guard key exists), number of fields to set, then field/value pairs, then fields to delete. Returns the new
// version, -1 on a version conflict, -2 when the fence does not hold, -3 when the guard refused.
const WRITE_SCRIPT = `
${fenceCheckLua("KEYS[2]", "ARGV[1]", "-2")}
if tonumber(redis.call("HGET", KEYS[1], "${VERSION}") or "0") ~= tonumber(ARGV[2]) then return -1 end
if ARGV[4] == "absent" and redis.call("EXISTS", KEYS[3]) == 1 then return -3 end
local i = 6
for _ = 1, tonumber(ARGV[5]) do
  redis.call("HSET", KEYS[1], ARGV[i], ARGV[i + 1])
  i = i + 2
end
while i <= #ARGV do
  redis.call("HDEL", KEYS[1], ARGV[i])
  i = i + 1
end
local v = redis.call("HINCRBY", KEYS[1], "${VERSION}", 1)
redis.call("PEXPIRE", KEYS[1], ARGV[3])
return v
`;

interface Snapshot {
  readonly version: number;
  readonly droppedBelow: number;
  readonly holds: Map<string, LiquidityHold>;
}

interface Change<T> {
  readonly set?: ReadonlyArray<LiquidityHold | { field: string; value: string }>;
  readonly del?: readonly string[];
  /** Write only if this key does not exist (a job's transaction record). */
  readonly guardAbsent?: string;
  readonly result: T;
}

export function createLiquidityHolds(params: {
  redis: Pick<Redis, "hgetall" | "hget" | "eval" | "exists">;
  prefix: string;
  chainId: number;
  signerAddress: string;
  /** The sender lease (send/fence.ts; a submitter always passes it); without it writes are not fenced. */
  fence?: FenceSource;
}): LiquidityHolds {
  const { redis, prefix, chainId } = params;
  const key = liquidityHoldsKey(prefix, chainId, params.signerAddress);
  const recordKeyOf = (jobId: string): string => txRecordKey(prefix, chainId, jobId);

  const read = async (): Promise<Snapshot> => {
    const raw = await redis.hgetall(key);
    const holds = new Map<string, LiquidityHold>();
    for (const [field, value] of Object.entries(raw)) {
      if (field !== VERSION && field !== DROPPED_BELOW) {
        holds.set(field, JSON.parse(value) as LiquidityHold);
      }
    }
    return { version: Number(raw[VERSION] ?? 0), droppedBelow: Number(raw[DROPPED_BELOW] ?? -1), holds };
  };

  /** Reads, lets `decide` compute a change, writes it if nothing changed meanwhile; again on a conflict. */
  const mutate = async <T>(decide: (s: Snapshot, term: number) => Promise<Change<T>>): Promise<T> => {
    for (let tries = 1; tries <= MAX_CAS_TRIES; tries += 1) {
      const fenced = senderFenceArgs(params.fence, key, "liquidity holds");
      const snapshot = await read();
      const change = await decide(snapshot, fenced.fence?.term ?? 0);
      const sets = (change.set ?? []).map((s) => ("field" in s ? [s.field, s.value] : [s.jobId, JSON.stringify(s)]));
      if (sets.length === 0 && (change.del ?? []).length === 0) {
        return change.result;
      }
      const found = Number(
        await redis.eval(
          WRITE_SCRIPT,
          3,
          key,
          fenced.key,
          change.guardAbsent ?? key,
          fenced.value,
          snapshot.version,
          HOLDS_TTL_MS,
          change.guardAbsent ? "absent" : "",
          sets.length,
          ...sets.flat(),
          ...(change.del ?? []),
        ),
      );
      if (found === -2) {
        throw senderFencedOut(params.fence, "liquidity holds");
      }
      if (found > 0) {
        return change.result;
      }
      // A concurrent writer got in first: read again, after a short random pause so the writers spread out.
      await sleep(Math.floor(Math.random() * 5));
    }
    throw new LiquidityHoldsBusyError(`liquidity holds of chain ${chainId} kept changing: ${MAX_CAS_TRIES} tries`, {
      chainId,
    });
  };
  return {
    list: async () => [...(await read()).holds.values()],
    forJob: (jobId) => createJobLiquidity(jobId),
    reconcile: async (chain) =>
      mutate(async (s) => {
        const set: LiquidityHold[] = [];
        const del: string[] = [];
        let kept = 0;
        for (const hold of s.holds.values()) {
          if (hold.minedBlock !== undefined) {
            kept += 1;
            continue;
          }
          const record = await loadRecord(hold.recordKey);
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
      }),
  };

  async function loadRecord(recordKey: string): Promise<TxRecord | undefined> {
    const json = await redis.hget(recordKey, "record");
    return json === null ? undefined : (JSON.parse(json) as TxRecord);
  }

  function createJobLiquidity(jobId: string): JobLiquidity {
    const recordKey = recordKeyOf(jobId);
    const updateOwn = (fn: (hold: LiquidityHold) => LiquidityHold | undefined): Promise<void> =>
      mutate(async (s) => {
        const own = s.holds.get(jobId);
        const next = own ? fn(own) : undefined;
        return { set: next && next !== own ? [next] : [], result: undefined };
      });
    return {
      checkAndHold: async ({ assetId, amount, readBalance }) => {
        const asset = assetId.toLowerCase();
        let at = await readBalance();
        return mutate(async (s, term) => {
          if (at.block < s.droppedBelow) {
            at = await readBalance();
            if (at.block < s.droppedBelow) {
              throw new LiquidityHoldsBusyError("the balance was read below the block of holds already dropped", {
                chainId,
                balanceBlock: at.block,
                droppedBelow: s.droppedBelow,
              });
            }
          }
          const nowMs = Date.now();
          const del: string[] = [];
          let heldByOthers = 0n;
          for (const hold of s.holds.values()) {
            if (hold.jobId === jobId) {
              continue;
            }
            if (hold.minedBlock !== undefined && hold.minedBlock <= at.block) {
              del.push(hold.jobId);
            } else if (
              hold.minedBlock === undefined &&
              nowMs - hold.atMs > ORPHAN_HOLD_MS &&
              (await redis.exists(hold.recordKey)) === 0
            ) {
              del.push(hold.jobId);
            } else if (hold.assetId === asset) {
              heldByOthers += BigInt(hold.amount);
            }
          }
          const droppedBelow =
            del.length > 0 ? [{ field: DROPPED_BELOW, value: String(Math.max(s.droppedBelow, at.block)) }] : [];
          if (at.balance - heldByOthers < amount) {
            return {
              set: droppedBelow,
              del,
              result: { ok: false, balance: at.balance, balanceBlock: at.block, heldByOthers } as HoldCheck,
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
          return { set: [hold, ...droppedBelow], del, result: { ok: true } as HoldCheck };
        });
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
        mutate(async (s) => {
          const own = s.holds.get(jobId);
          if (!own) {
            return { result: undefined };
          }
          const record = await loadRecord(recordKey);
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
        }),
    };
  }
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

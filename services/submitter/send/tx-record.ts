import type { Redis } from "ioredis";
import type { FeeJson } from "../../../shared/protocol/gas";
import { transferRetentionSec } from "../../../shared/protocol/retention";
import { TX_JOB, type TxJobResult } from "../../../shared/queues";
import { nonceJobsKey, txRecordKey } from "../../../shared/coordination/keys";
import { readTxRecord } from "../../../shared/coordination/in-flight";
import { TxRecordConflictError } from "./errors";
import { defineScript, reply } from "../../../shared/redis/script-runner";
import { senderFenceArgs, senderFencedOut, type FenceSource } from "./fence";

/**
 * The crash-safe state of one job's transaction, at `routerKey(prefix, "tx", chainId, jobId)`.
 * Written before every broadcast, so after a crash the next run knows every transaction the job may have
 * put on chain (the raw bytes included: they are public the moment they are sent) and can rebroadcast
 * instead of sending again.
 */
export interface TxAttempt {
  readonly hash: string;
  /** Signed serialized transaction. */
  readonly raw: string;
  readonly nonce: number;
  readonly fee: FeeJson;
  readonly gasLimit: string;
  /** When the attempt was persisted, right before its broadcast; the bump timer runs from here. */
  readonly sentAtMs: number;
}

/** What the job sends; fixed at the first attempt, reused for bumps and for a rebuild with a fresh nonce. */
export interface TxCall {
  readonly to: string;
  readonly data: string;
  /** Wei, decimal string. */
  readonly value: string;
  readonly gasLimit: string;
  /**
   * The most this call may pay per gas, below the chain's gasPriceMaximum (wei, decimal string): a relay's fee
   * covers only so much (operations/relay-cost.ts). The first fee and every bump are capped at it.
   */
  readonly maxFeePerGas?: string;
}

/** The fee ceiling of a call's transactions: the chain's gasPriceMaximum, or the call's own when lower. */
export function feeCeilingOf(call: TxCall, gasPriceMaximum: bigint): bigint {
  const own = call.maxFeePerGas === undefined ? undefined : BigInt(call.maxFeePerGas);
  return own !== undefined && own < gasPriceMaximum ? own : gasPriceMaximum;
}

/**
 * What an operation returns instead of a TxCall when the job's effect is already on chain: the pipeline
 * completes the job with `{noop: true}` and never allocates a nonce or writes a record for it.
 */
export interface TxNoop {
  readonly noop: true;
  /** Why nothing is sent, for the job's outcome line. */
  readonly reason: string;
  /** The block the operation's chain reads were made at (or the latest block seen). */
  readonly blockNumber: number;
  /** The transaction that already had the job's effect, when the operation knows it (a withdrawal found on chain). */
  readonly transactionHash?: string;
}

export function isTxNoop(value: TxCall | TxNoop): value is TxNoop {
  return (value as Partial<TxNoop>).noop === true;
}

export interface TxRecord {
  /** Compare-and-set counter: every save must name the version it read. */
  readonly version: number;
  readonly jobId: string;
  readonly jobName: string;
  readonly chainId: number;
  readonly from: string;
  /** sha256 of the job's name and data: a record never serves a different request under a reused job id. */
  readonly dataHash: string;
  readonly call: TxCall;
  /**
   * The expiry (unix seconds, either side's) of the transfer the job acts on; absent for a job that acts on
   * none (remove-liquidity, a nonce-gap filler). Sets how long the
   * finished record is kept (finishedRecordTtlMs).
   */
  readonly transferExpirySec?: number;
  /** Nonce of the newest attempt; -1 before the first. */
  readonly nonce: number;
  /** Oldest first; may span nonces when a nonce was taken by a transaction this job did not send. */
  readonly attempts: readonly TxAttempt[];
  /** Fee bumps at the current nonce. */
  readonly bumps: number;
  /** Set when bumping must stop for good (INSUFFICIENT_FUNDS): only waiting is left. */
  readonly bumpsHaltedBy?: string;
  readonly status: "sending" | "reverted" | "confirmed";
  readonly result?: TxJobResult;
  /** The attempt mined with status 0 (set with `reverted`): the ledger is told of it, it cost gas. */
  readonly revertedHash?: string;
  readonly lastError?: { readonly code: string; readonly message: string; readonly atMs: number };
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** The sender lease (owner process and its fencing token, `term`) under which this version was written. */
  readonly owner?: { readonly id: string; readonly term: number };
}

/**
 * A finished record of a job that acts on no transfer is kept this long, like finished jobs (TX_JOB_DEFAULTS),
 * so a re-run of a completed job still finds its result. Unfinished records never expire: they may describe a
 * live transaction.
 */
export const FINISHED_RECORD_TTL_MS = 31 * 24 * 3600 * 1000;

/**
 * A withdrawal's record never expires (0: PERSIST): the contract does not refuse a second removeLiquidity, and its
 * job can outlive any fixed time (BullMQ removes a finished job only when another job on the queue finishes), so a
 * completed withdrawal retried from the dashboard must still find its result. A few hundred bytes per withdrawal.
 */
const KEPT_FOR_GOOD = 0;

/**
 * How long a finished record is kept from `nowMs` (0: for good). A transfer's record is kept until both sides of the transfer
 * expired, plus a day (shared/protocol/retention.ts): after that no job can act on the transfer again, and the
 * contract refuses a second execution of the job's call anyway. That is days for the SDK's 3-day expiry, where
 * a fixed month held Redis to about 0.75 swaps/s (docs/scaling.md).
 */
export function finishedRecordTtlMs(record: Pick<TxRecord, "transferExpirySec" | "jobName">, nowMs: number): number {
  if (record.jobName === TX_JOB.removeLiquidity) {
    return KEPT_FOR_GOOD;
  }
  return record.transferExpirySec === undefined
    ? FINISHED_RECORD_TTL_MS
    : transferRetentionSec(record.transferExpirySec, Math.floor(nowMs / 1000)) * 1000;
}

/**
 * Compare-and-set on the `version` field, fenced by the sender lease (shared/redis/scripts/tx-record-save.lua):
 * -1 on success, -2 when the lease is not the writer's, else the version found (0 = no record).
 */
const SAVE = defineScript({
  file: "tx-record-save",
  keys: ["record", "lease", "nonceJobs"],
  args: ["expected", "version", "json", "ttlMs", "fenceValue", "nonce", "jobId"],
  decode: reply.number,
});

export interface TxRecordStore {
  load(jobId: string): Promise<TxRecord | undefined>;
  /** Whether the job has a record (without reading it). */
  exists(jobId: string): Promise<boolean>;
  /** The record's Redis key: a liquidity hold names it, and a hold's drop is guarded on its absence. */
  keyOf(jobId: string): string;
  /** The job whose record last had an attempt at `nonce` of `from` (the nonce-jobs index), if any. */
  jobAtNonce(from: string, nonce: number): Promise<string | undefined>;
  /** Of `nonces`, those no record of `from` names in the nonce-jobs index (one HMGET). */
  unnamedNonces(from: string, nonces: readonly number[]): Promise<number[]>;
  /** The highest nonce any record of `from` has a persisted attempt at (-1 when none). */
  maxIndexedNonce(from: string): Promise<number>;
  /** Drops index entries below `belowNonce` (nonces the chain has used). */
  pruneNonceIndex(from: string, belowNonce: number): Promise<void>;
  /** Every entry of the nonce-jobs index of `from` (one HGETALL; the index is pruned to the last few hundred nonces). */
  indexedJobs(from: string): Promise<Array<{ readonly nonce: number; readonly jobId: string }>>;
  /** Writes `record` if the stored version is still `record.version`; returns it with the version advanced. */
  save(record: TxRecord): Promise<TxRecord>;
  /**
   * Moves a `reverted` record aside (under `<jobId>-reverted-<version>`, with the TTL it was saved with), so the
   * job's next run builds a new transaction; returns the archive's job id, or undefined when the record is
   * absent or not reverted. Safe: a mined revert used the nonce, so none of the job's transactions can still
   * be mined. Only for jobs the contract protects from replays (a second fulfill reverts #F:019).
   */
  archiveReverted(jobId: string): Promise<string | undefined>;
}

/** Moves a reverted record aside (shared/redis/scripts/tx-record-archive-reverted.lua): 1, 0, or -2 (fence). */
const ARCHIVE_REVERTED = defineScript({
  file: "tx-record-archive-reverted",
  keys: ["record", "archive", "lease"],
  args: ["ttlMs", "fenceValue"],
  decode: reply.number,
});

/**
 * Of `nonces` of `from` on `chainId`, those no send record names in the nonce-jobs index (one HMGET). The store's
 * `unnamedNonces`; also read on another chain than the job's (a receiving prepare looks at the sending chain).
 */
export async function unnamedNoncesOn(
  at: { redis: Pick<Redis, "hmget">; prefix: string; chainId: number },
  from: string,
  nonces: readonly number[],
): Promise<number[]> {
  if (nonces.length === 0) {
    return [];
  }
  const jobs = await at.redis.hmget(nonceJobsKey(at.prefix, at.chainId, from), ...nonces.map(String));
  return nonces.filter((_, i) => jobs[i] === null);
}

/**
 * The send record of job `jobId` on `chainId`: the store's `load`; also read on another chain than the job's (a
 * sender cancel looks at the receiving chain's prepare-receiver record).
 */
export async function loadTxRecordOn(
  at: { redis: Pick<Redis, "hget">; prefix: string; chainId: number },
  jobId: string,
): Promise<TxRecord | undefined> {
  // The submitter wrote it: the shared reader's view is the whole record.
  return (await readTxRecord(at.redis, at.prefix, at.chainId, jobId)) as TxRecord | undefined;
}

export function createTxRecordStore(params: {
  redis: Redis;
  prefix: string;
  chainId: number;
  /** The writer's sender lease (send/fence.ts; a submitter always passes it); without it writes are not fenced. */
  fence?: FenceSource;
}): TxRecordStore {
  const { redis, prefix, chainId } = params;
  const recordOf = (jobId: string): string => `the transaction record of job ${jobId}`;
  return {
    load: (jobId) => loadTxRecordOn({ redis, prefix, chainId }, jobId),
    exists: async (jobId) => (await redis.exists(txRecordKey(prefix, chainId, jobId))) === 1,
    keyOf: (jobId) => txRecordKey(prefix, chainId, jobId),
    jobAtNonce: async (from, nonce) =>
      (await redis.hget(nonceJobsKey(prefix, chainId, from), String(nonce))) ?? undefined,
    unnamedNonces: (from, nonces) => unnamedNoncesOn({ redis, prefix, chainId }, from, nonces),
    maxIndexedNonce: async (from) =>
      Math.max(-1, ...(await redis.hkeys(nonceJobsKey(prefix, chainId, from))).map(Number)),
    pruneNonceIndex: async (from, belowNonce) => {
      const key = nonceJobsKey(prefix, chainId, from);
      const stale = (await redis.hkeys(key)).filter((field) => Number(field) < belowNonce);
      if (stale.length > 0) {
        await redis.hdel(key, ...stale);
      }
    },
    indexedJobs: async (from) =>
      Object.entries(await redis.hgetall(nonceJobsKey(prefix, chainId, from))).map(([nonce, jobId]) => ({
        nonce: Number(nonce),
        jobId,
      })),
    save: async (record) => {
      const key = txRecordKey(prefix, chainId, record.jobId);
      const fenced = senderFenceArgs(params.fence, key, recordOf(record.jobId));
      const owner = fenced.fence ? { id: fenced.fence.ownerId, term: fenced.fence.term } : record.owner;
      const next: TxRecord = { ...record, version: record.version + 1, updatedAtMs: Date.now(), owner };
      const ttlMs = next.status === "sending" ? 0 : finishedRecordTtlMs(next, Date.now());
      const found = await SAVE.run(redis, {
        keys: { record: key, lease: fenced.key, nonceJobs: nonceJobsKey(prefix, chainId, record.from) },
        args: {
          expected: record.version,
          version: next.version,
          json: JSON.stringify(next),
          ttlMs,
          fenceValue: fenced.value,
          nonce: record.nonce,
          jobId: record.jobId,
        },
      });
      if (found === -2) {
        throw senderFencedOut(params.fence, recordOf(record.jobId));
      }
      if (found !== -1) {
        throw new TxRecordConflictError("the job's transaction record was changed by another processor", {
          jobId: record.jobId,
          chainId,
          expectedVersion: record.version,
          foundVersion: found,
        });
      }
      return next;
    },
    archiveReverted: async (jobId) => {
      const version = await redis.hget(txRecordKey(prefix, chainId, jobId), "version");
      const archiveId = `${jobId}-reverted-${version ?? "0"}`;
      const key = txRecordKey(prefix, chainId, jobId);
      const fenced = senderFenceArgs(params.fence, key, recordOf(jobId));
      const moved = await ARCHIVE_REVERTED.run(redis, {
        keys: { record: key, archive: txRecordKey(prefix, chainId, archiveId), lease: fenced.key },
        args: { ttlMs: FINISHED_RECORD_TTL_MS, fenceValue: fenced.value },
      });
      if (moved === -2) {
        throw senderFencedOut(params.fence, recordOf(jobId));
      }
      return moved === 1 ? archiveId : undefined;
    },
  };
}

/** What a record is created with: the job and what it sends. */
export type NewTxRecordParams = Pick<
  TxRecord,
  "jobId" | "jobName" | "chainId" | "from" | "dataHash" | "call" | "transferExpirySec"
>;

/** An unsaved record (version 0: "must not exist yet"); it is first saved together with its first attempt. */
export function newTxRecord(params: NewTxRecordParams): TxRecord {
  const nowMs = Date.now();
  return {
    ...params,
    version: 0,
    nonce: -1,
    attempts: [],
    bumps: 0,
    status: "sending",
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
  };
}

export function latestAttempt(record: TxRecord): TxAttempt | undefined {
  return record.attempts[record.attempts.length - 1];
}

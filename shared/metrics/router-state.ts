import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { poolAssetsOf } from "../config/pools";
import type { RouterConfig } from "../config/types";
import { bidReservationsKey, chainHeadKey, gasBalanceKey, routerBalanceKey, txRecordKey } from "../coordination/keys";

/**
 * Read-only views of what the processes keep in Redis, for /status, the SRE command line and the scrape-time
 * gauges. Only the fields an operator needs are typed here: the submitter owns the tx record's full shape.
 */
export interface TxAttemptView {
  readonly hash: string;
  readonly nonce: number;
  readonly fee: Record<string, string>;
  readonly sentAtMs: number;
}

export interface TxRecordView {
  readonly jobId: string;
  readonly jobName: string;
  readonly chainId: number;
  readonly nonce: number;
  readonly status: "sending" | "reverted" | "confirmed";
  readonly bumps: number;
  readonly attempts: readonly TxAttemptView[];
  readonly result?: { readonly transactionHash: string; readonly blockNumber: number; readonly noop?: boolean };
  readonly lastError?: { readonly code: string; readonly message: string; readonly atMs: number };
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

/** A job's send record without the signed raw bytes (public, but noise for an operator). */
export async function readTxRecord(
  redis: Redis,
  prefix: string,
  chainId: number,
  jobId: string,
): Promise<TxRecordView | undefined> {
  const json = await redis.hget(txRecordKey(prefix, chainId, jobId), "record");
  if (json === null) {
    return undefined;
  }
  const parsed = JSON.parse(json) as TxRecordView & { attempts: Array<TxAttemptView & { raw?: string }> };
  return {
    ...parsed,
    attempts: parsed.attempts.map(({ hash, nonce, fee, sentAtMs }) => ({ hash, nonce, fee, sentAtMs })),
  };
}

/** Every BullMQ state an operator cares about, in display order. */
export const JOB_STATES = [
  "waiting",
  "active",
  "delayed",
  "prioritized",
  "waiting-children",
  "completed",
  "failed",
] as const;
export type JobState = (typeof JOB_STATES)[number];

export async function queueCounts(queue: Queue): Promise<Record<JobState, number>> {
  return (await queue.getJobCounts(...JOB_STATES)) as Record<JobState, number>;
}

export interface PendingTx {
  readonly jobId: string;
  readonly jobName: string;
  readonly nonce: number;
  readonly hash: string;
  readonly ageSec: number;
}

/** The job states whose send records `pendingTransactions` reads by default: jobs that can still run. */
const RUNNING_JOB_STATES = ["active", "delayed", "waiting", "prioritized"] as const;

/**
 * Transactions broadcast and not yet confirmed: unfinished records of the queue's active and retrying jobs, and
 * of failed jobs too with `includeFailed` (a job whose attempts ran out while waiting for mining leaves a
 * `sending` record: its transaction may still be mined; /status's drain verdict counts it).
 */
export async function pendingTransactions(
  redis: Redis,
  prefix: string,
  queue: Queue,
  chainId: number,
  nowMs = Date.now(),
  includeFailed = false,
): Promise<PendingTx[]> {
  const jobs = await queue.getJobs([...RUNNING_JOB_STATES, ...(includeFailed ? (["failed"] as const) : [])], 0, 99);
  const out: PendingTx[] = [];
  for (const job of jobs) {
    if (!job?.id) {
      continue;
    }
    const record = await readTxRecord(redis, prefix, chainId, job.id);
    const last = record?.attempts[record.attempts.length - 1];
    if (!record || record.status !== "sending" || !last) {
      continue;
    }
    // The bump clock runs from the first attempt at the current nonce.
    const first = record.attempts.find((a) => a.nonce === record.nonce) ?? last;
    out.push({
      jobId: job.id,
      jobName: record.jobName,
      nonce: record.nonce,
      hash: last.hash,
      ageSec: Math.max(0, (nowMs - first.sentAtMs) / 1000),
    });
  }
  return out.sort((a, b) => b.ageSec - a.ageSec);
}

export interface AssetState {
  readonly assetId: string;
  /** Base units, decimal strings; undefined when the poller has not written it yet. */
  readonly liquidity?: string;
  readonly reserved: string;
  readonly updatedAtMs?: number;
}

export interface ChainState {
  readonly chainId: number;
  readonly head?: number;
  readonly syncedBlock?: number;
  readonly headAgeSec?: number;
  readonly gasWei?: string;
  readonly minGasWei: string;
  readonly assets: readonly AssetState[];
}

export async function readChainState(
  redis: Redis,
  config: RouterConfig,
  chainId: number,
  nowMs = Date.now(),
): Promise<ChainState> {
  const prefix = config.redisPrefix;
  // Lower-cased, as the metrics and the admin API have always shown them.
  const assets = poolAssetsOf(config, chainId).map((assetId) => assetId.toLowerCase());
  const pipeline = redis.pipeline().get(chainHeadKey(prefix, chainId)).hgetall(gasBalanceKey(prefix, chainId));
  for (const assetId of assets) {
    pipeline
      .hgetall(routerBalanceKey(prefix, chainId, assetId))
      .hget(bidReservationsKey(prefix, chainId, assetId), "total");
  }
  const results = (await pipeline.exec()) ?? [];
  const value = (i: number): unknown => {
    const [err, v] = results[i] ?? [null, null];
    if (err) {
      throw err;
    }
    return v;
  };
  const headJson = value(0) as string | null;
  const head = headJson
    ? (JSON.parse(headJson) as { blockNumber: number; syncedBlock?: number; updatedAtMs: number })
    : undefined;
  const gas = value(1) as Record<string, string>;
  return {
    chainId,
    head: head?.blockNumber,
    syncedBlock: head?.syncedBlock,
    headAgeSec: head ? Math.max(0, (nowMs - head.updatedAtMs) / 1000) : undefined,
    gasWei: gas.amount,
    minGasWei: config.chainConfig[String(chainId)]?.minGas ?? "0",
    assets: assets.map((assetId, i) => {
      const balance = value(2 + 2 * i) as Record<string, string>;
      return {
        assetId,
        liquidity: balance.amount,
        reserved: (value(3 + 2 * i) as string | null) ?? "0",
        updatedAtMs: balance.updatedAtMs ? Number(balance.updatedAtMs) : undefined,
      };
    }),
  };
}

import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { TX_JOB, transferKey, txJobId } from "../queues/jobs";
import { txRecordKey } from "./keys";

/** Job states in which a job can still run (and send). */
const LIVE_JOB_STATES: ReadonlySet<string> = new Set([
  "waiting",
  "active",
  "delayed",
  "prioritized",
  "waiting-children",
]);

export interface PrepareReceiverInFlightParams {
  /** The receiving chain's transaction queue. */
  readonly queue: Pick<Queue, "getJobState">;
  readonly redis: Pick<Redis, "hget">;
  readonly prefix: string;
  readonly receivingChainId: number;
  readonly transactionId: string;
  readonly user: string;
}

/**
 * Why the receiving side may be getting prepared right now although the chain does not show it yet, or
 * undefined. A sender cancel must never race a receiver prepare: the user would be refunded on the sending
 * chain and could still be paid on the receiving one. Two signs, both needed:
 * - the prepare-receiver job can still run (waiting, active, delayed for a retry, ...);
 * - its transaction record says `sending` (a transaction may be in a mempool even if the job itself failed,
 *   e.g. attempts exhausted while waiting for mining) or `confirmed` (then the prepare is mined and a read
 *   that shows no receiving side came from a provider behind it).
 */
export async function findPrepareReceiverInFlight(params: PrepareReceiverInFlightParams): Promise<string | undefined> {
  const jobId = txJobId(TX_JOB.prepareReceiver, transferKey(params.transactionId, params.user));
  const state = await params.queue.getJobState(jobId);
  if (LIVE_JOB_STATES.has(state)) {
    return `the prepare-receiver job ${jobId} on chain ${params.receivingChainId} is ${state}`;
  }
  const status = await txRecordStatus(params.redis, params.prefix, params.receivingChainId, jobId);
  if (status === "sending" || status === "confirmed") {
    return `the prepare-receiver job ${jobId} on chain ${params.receivingChainId} has a ${String(status)} transaction`;
  }
  return undefined;
}

/**
 * The fields of a job's send record (the submitter's send/tx-record.ts TxRecord) that other processes judge by,
 * as stored: untyped, since another process wrote them.
 */
export interface TxRecordView {
  readonly status?: unknown;
  /** The attempt mined with status 0 (set with status `reverted`). */
  readonly revertedHash?: unknown;
  readonly call?: { readonly to?: unknown };
}

/** A job's send record as stored, or undefined when the job never persisted a transaction. */
export async function readTxRecord(
  redis: Pick<Redis, "hget">,
  prefix: string,
  chainId: number,
  jobId: string,
): Promise<TxRecordView | undefined> {
  const json = await redis.hget(txRecordKey(prefix, chainId, jobId), "record");
  return json === null ? undefined : (JSON.parse(json) as TxRecordView);
}

/**
 * The status of a job's send record (the submitter's send/tx-record.ts): `sending` (a transaction may be in a
 * mempool or mined), `confirmed`, `reverted`, or undefined when the job never persisted a transaction.
 */
export async function txRecordStatus(
  redis: Pick<Redis, "hget">,
  prefix: string,
  chainId: number,
  jobId: string,
): Promise<string | undefined> {
  const record = await readTxRecord(redis, prefix, chainId, jobId);
  if (record === undefined) {
    return undefined;
  }
  return typeof record.status === "string" ? record.status : "unknown";
}

import type { Job } from "bullmq";
import type { Redis } from "ioredis";
import { chainIdOfTxQueue, TX_JOB, transferKey } from "../queues";
import { transferRecordKey } from "../coordination/keys";
import { readTxRecord } from "./router-state";

/**
 * Whether running a finished job again could act twice: the one rule behind every operator retry (the queue
 * command line and the dashboard). BullMQ and bull-board retry completed jobs too, and a completed
 * withdrawal can outlive its send record, so only a failed job whose effect is not on chain may run again.
 */

export interface TransferSide {
  readonly chainId: number;
  readonly status?: string;
}

export interface TransferSides {
  readonly transactionId: string;
  readonly sending: TransferSide;
  readonly receiving: TransferSide;
}

interface TxDataIds {
  readonly transactionId: string;
  readonly user: string;
  readonly sendingChainId: number;
  readonly receivingChainId: number;
}

function txDataOf(job: Job): TxDataIds | undefined {
  const data = job.data as { txData?: TxDataIds; sender?: { txData?: TxDataIds } };
  return data.txData ?? data.sender?.txData;
}

/** The transfer's both sides as the pollers stored them (lifecycle jobs only). */
export async function transferSidesOf(redis: Redis, prefix: string, job: Job): Promise<TransferSides | null> {
  const txData = txDataOf(job);
  if (!txData) {
    return null;
  }
  const key = transferKey(txData.transactionId, txData.user);
  const side = async (chainId: number): Promise<TransferSide> => {
    const json = await redis.get(transferRecordKey(prefix, chainId, key));
    return { chainId, status: json ? (JSON.parse(json) as { status?: string }).status : undefined };
  };
  return {
    transactionId: txData.transactionId,
    sending: await side(txData.sendingChainId),
    receiving: await side(txData.receivingChainId),
  };
}

/**
 * Why the job must not run again, or undefined when a retry is safe: it is not failed (a completed job's
 * effect is on chain; the others are still the queue's), its transaction is confirmed, or the transfer
 * already shows the job's effect.
 */
export async function retryRefusal(redis: Redis, prefix: string, job: Job): Promise<string | undefined> {
  const state = await job.getState();
  if (state === "completed") {
    return "the job completed: its effect is on chain";
  }
  const chainId = chainIdOfTxQueue(job.queueName) as number;
  const record = job.id ? await readTxRecord(redis, prefix, chainId, job.id) : undefined;
  if (record?.status === "confirmed") {
    return `its transaction ${record.result?.transactionHash ?? ""} is confirmed`.trim();
  }
  const effect = effectOnChain(job.name, await transferSidesOf(redis, prefix, job));
  if (effect) {
    return effect;
  }
  return state === "failed" ? undefined : `it is ${state}, only failed jobs are retried`;
}

function effectOnChain(jobName: string, transfer: TransferSides | null): string | undefined {
  if (!transfer) {
    return undefined;
  }
  const { sending, receiving } = transfer;
  const done = (side: TransferSide): boolean => side.status === "Fulfilled" || side.status === "Cancelled";
  switch (jobName) {
    case TX_JOB.prepareReceiver:
      return receiving.status !== undefined
        ? `the receiving side is already ${receiving.status} on chain ${receiving.chainId}`
        : undefined;
    case TX_JOB.fulfillSender:
    case TX_JOB.cancelSender:
      return done(sending) ? `the sending side is already ${sending.status} on chain ${sending.chainId}` : undefined;
    case TX_JOB.cancelReceiver:
    case TX_JOB.relayFulfill:
      return done(receiving)
        ? `the receiving side is already ${receiving.status} on chain ${receiving.chainId}`
        : undefined;
    default:
      return undefined;
  }
}

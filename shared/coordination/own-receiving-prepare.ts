import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { sameInvariant } from "../protocol/digests";
import type { TransactionData } from "../protocol/types";
import { findPrepareReceiverInFlight } from "./in-flight";
import { TX_JOB, transferKey, txJobId, type PrepareReceiverJobData } from "../queues/jobs";
import { readTransferDecision } from "./transfer-decision";

/**
 * What the router's own records say about a receiving side its poller has not stored yet:
 * - `ours`: the transfer's decision is "prepare", the prepare-receiver job on this chain's queue names the same
 *   transfer (every invariant field), and that job can still run or has a sending or confirmed transaction;
 * - `other-transfer`: that job exists but names another transfer than `txData` (an invariant field differs);
 * - `none`: no such decision or job: not a transfer this router prepares (or not yet decided).
 */
export type OwnReceivingPrepare =
  | { readonly kind: "ours"; readonly evidence: string }
  | { readonly kind: "other-transfer" }
  | { readonly kind: "none" };

export interface OwnReceivingPrepareParams {
  /** The receiving chain's transaction queue. */
  readonly queue: Pick<Queue, "getJob" | "getJobState">;
  readonly redis: Pick<Redis, "get" | "hget">;
  readonly prefix: string;
  readonly receivingChainId: number;
  /** The receiving side a requester names (its invariant fields are compared with the job's). */
  readonly txData: TransactionData;
}

/**
 * Redis reads only (decision, job, transaction record): callers use it to decide whether a chain read is
 * worth making, so a requester naming transfers that are not ours never makes the router do RPCs.
 */
export async function findOwnReceivingPrepare(params: OwnReceivingPrepareParams): Promise<OwnReceivingPrepare> {
  const { txData } = params;
  const ids = { transactionId: txData.transactionId, user: txData.user };
  if ((await readTransferDecision({ redis: params.redis, prefix: params.prefix, ...ids })) !== "prepare") {
    return { kind: "none" };
  }
  const job = await params.queue.getJob(txJobId(TX_JOB.prepareReceiver, transferKey(ids.transactionId, ids.user)));
  const sender = (job?.data as PrepareReceiverJobData | undefined)?.sender?.txData;
  if (!sender || sender.receivingChainId !== params.receivingChainId) {
    return { kind: "none" };
  }
  if (!sameInvariant(sender, txData)) {
    return { kind: "other-transfer" };
  }
  const evidence = await findPrepareReceiverInFlight({
    queue: params.queue,
    redis: params.redis,
    prefix: params.prefix,
    receivingChainId: params.receivingChainId,
    ...ids,
  });
  return evidence === undefined ? { kind: "none" } : { kind: "ours", evidence };
}

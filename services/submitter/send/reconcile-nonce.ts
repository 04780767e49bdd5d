import type { Queue } from "bullmq";
import type { Logger } from "../../../shared/logging/create-logger";
import { approvalRecordId } from "../../../shared/coordination/keys";
import type { NonceStore } from "./nonce-store";
import type { TxRecordStore } from "./tx-record";

const PAGE_SIZE = 500;

export interface ReconcileResult {
  readonly stored?: number;
  readonly pending: number;
  readonly action: "none" | "kept" | "reset";
}

/**
 * At worker start: compares the stored next nonce with the chain's pending count. A stored value above the
 * chain's means nonces were handed out whose transactions the node no longer has; the gap would hold every
 * later transaction forever, so it is closed by resetting to the chain's count, unless an unfinished job
 * still holds a nonce inside the gap (that job rebroadcasts it when it runs, which closes the gap by itself).
 * The reset is a compare-and-set: an instance that sent meanwhile wins.
 */
export async function reconcileNonce(params: {
  nonces: NonceStore;
  records: TxRecordStore;
  queue: Pick<Queue, "getJobs">;
  logger: Logger;
}): Promise<ReconcileResult> {
  const { nonces, logger } = params;
  const [stored, pending] = await Promise.all([nonces.get(), nonces.pendingCount()]);
  logger.info("nonce reconcile", { at: "submitter.nonce", stored, pending, key: nonces.key });
  if (stored === undefined || stored <= pending) {
    return { stored, pending, action: "none" };
  }
  const holder = await findJobHoldingNonce(params, pending, stored);
  if (holder) {
    logger.info("stored nonce is ahead of the chain, kept: an unfinished job holds a nonce in the gap", {
      at: "submitter.nonce",
      stored,
      pending,
      jobId: holder.jobId,
      nonce: holder.nonce,
    });
    return { stored, pending, action: "kept" };
  }
  const reset = await nonces.resetIfUnchanged(stored, pending);
  logger.warn(
    reset
      ? "stored nonce was ahead of the chain with no job holding the gap: reset to the chain's count"
      : "stored nonce moved during reconcile: left alone",
    {
      at: "submitter.nonce",
      stored,
      pending,
    },
  );
  return { stored, pending, action: reset ? "reset" : "kept" };
}

async function findJobHoldingNonce(
  params: { records: TxRecordStore; queue: Pick<Queue, "getJobs"> },
  from: number,
  to: number,
): Promise<{ jobId: string; nonce: number } | undefined> {
  // One state at a time: BullMQ applies start/end to each state's list separately.
  for (const state of ["active", "waiting", "delayed", "prioritized"] as const) {
    for (let start = 0; ; start += PAGE_SIZE) {
      const jobs = await params.queue.getJobs([state], start, start + PAGE_SIZE - 1, true);
      for (const job of jobs) {
        // An add-liquidity-for job's approval is a record of its own, sent before the job's own record exists.
        for (const recordId of job?.id ? [job.id, approvalRecordId(job.id)] : []) {
          const record = await params.records.load(recordId);
          if (record && record.status === "sending" && record.nonce >= from && record.nonce < to) {
            return { jobId: record.jobId, nonce: record.nonce };
          }
        }
      }
      if (jobs.length < PAGE_SIZE) {
        break;
      }
    }
  }
  return undefined;
}

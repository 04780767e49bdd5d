import type { Queue, Worker } from "bullmq";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { errorMessage } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import type { TxJobData, TxJobResult } from "../../../shared/queues";
import type { Fence } from "../../../shared/coordination/lease";
import type { ReplicationGuard } from "../../../shared/coordination/replication";
import type { SubmitterContext } from "../context";
import type { LiquidityHolds } from "../liquidity-in-flight";
import { SenderLeaseLostError } from "../send/errors";
import { reconcileNonce } from "../send/reconcile-nonce";
import { releaseOrphanedJobs } from "./release-orphaned-jobs";

/**
 * A new sender term takes back, in order, what the previous holder may have left: the term is on the replicas,
 * the nonce sequence is reconciled and floored above every stored transaction, the previous holder's active jobs
 * are released, the liquidity holds are reconciled; only then does the worker run.
 */
export async function beginSenderTerm(p: {
  ctx: SubmitterContext;
  queue: Queue;
  worker: Worker<TxJobData, TxJobResult, string>;
  holds: LiquidityHolds;
  fence: Fence;
  leaseReplication: ReplicationGuard | undefined;
}): Promise<void> {
  const { ctx, queue, fence } = p;
  const { nonces, records, logger, from, redis } = ctx;
  // The term's acquisition is on the replicas before this process acts on it (a failover that forgot it
  // could hand the lease to a second sender); not acknowledged in time: the keeper drops the term and retries.
  await p.leaseReplication?.ensure(p.leaseReplication.mark());
  await reconcileNonce({ nonces, records, queue, logger }).catch((err: unknown) => {
    // Allocation still takes max(stored, chain pending), so a skipped reconcile can leave a gap, never a reuse.
    logger.error("nonce reconcile failed; continuing", { at: "submitter.nonce", error: errorMessage(err) });
  });
  // Never sign at a nonce any record already holds a transaction at (a previous holder's job may resume it).
  nonces.setFloor((await records.maxIndexedNonce(from)) + 1);
  const released = await releaseOrphanedJobs(redis, queue, fence);
  if (released < 0) {
    throw new SenderLeaseLostError("the sender lease changed hands while this term began", {
      leaseTerm: fence.term,
    });
  }
  if (released > 0) {
    logger.warn("took over the previous sender's active jobs: they resume from their records", {
      at: "submitter.lease",
      jobs: released,
    });
  }
  await reconcileHolds(p.holds, ctx.provider, from, logger);
  await p.worker.resume();
}

/**
 * A new term's view of the liquidity holds the previous holder left (liquidity-in-flight.ts reconcile). A failure
 * is logged, not thrown: holds only ever over-count, so a skipped reconcile parks prepares longer, never sends one
 * too many; the holds are reconciled again as their jobs resume and at the next takeover.
 */
async function reconcileHolds(
  holds: LiquidityHolds,
  provider: ChainProvider,
  from: string,
  logger: Logger,
): Promise<void> {
  try {
    // The count first: a nonce used by then is mined in a block at or before the head read after it.
    const minedNonceCount = await provider.getTransactionCount(from, "latest");
    const headBlock = await provider.getBlockNumber();
    const result = await holds.reconcile({ minedNonceCount, headBlock });
    logger.info("liquidity holds reconciled", { at: "submitter.liquidity", ...result });
  } catch (err) {
    logger.error("liquidity holds reconcile failed; continuing", {
      at: "submitter.liquidity",
      error: errorMessage(err),
    });
  }
}

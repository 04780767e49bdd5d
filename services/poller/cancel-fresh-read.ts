import type { TransferRecord } from "../../shared/protocol/types";
import { TX_JOB, txJobId } from "../../shared/queues";
import { prefetchCounterparts } from "./batch-reads";
import type { PollerContext } from "./context";
import type { Plan } from "./plan-action";
import { planFor, receivingView } from "./plan-record";
import { tryReconcile } from "./reconcile";

/**
 * A cancel of either side is enqueued only after a fresh on-chain read of both sides (issue: a missed
 * receiving fulfill made the sending side look refundable). A cancel job that already exists and has not
 * failed needs no new read; a failed one would be retried, so it does.
 */
export async function cancelNeedsFreshRead(ctx: PollerContext, plan: Plan, transferKey: string): Promise<boolean> {
  if (plan.kind !== "enqueue" || (plan.job.name !== TX_JOB.cancelSender && plan.job.name !== TX_JOB.cancelReceiver)) {
    return false;
  }
  if (
    plan.guard !== undefined &&
    (await ctx.queueFor(plan.guard.receivingChainId).getJob(txJobId(TX_JOB.prepareReceiver, transferKey)))
  ) {
    return false; // the executor's guard refuses this cancel anyway
  }
  const existing = await ctx.queueFor(plan.job.chainId).getJob(txJobId(plan.job.name, transferKey));
  return existing === undefined || (await existing.getState()) === "failed";
}

/**
 * A cancel whose batch reads are not fresh enough (cancelMayUseBatchReads: no agreeing reconcile, or one older
 * than MAX_CANCEL_READ_AGE_MS): both sides are reconciled against the chains again, and the record is planned
 * again from the store as that reconcile left it (the plan was made from the batch's MGET and the tick's view of
 * the receiving chain, which may be older). Only the same cancel goes ahead; anything else is decided next tick.
 */
export async function replanAfterFreshRead(
  ctx: PollerContext,
  record: TransferRecord,
  plan: Extract<Plan, { kind: "enqueue" }>,
  p: { head: number; nowSec: number },
): Promise<Plan | undefined> {
  const check = await tryReconcile(ctx, record, { receivingReadBestEffort: plan.guard !== undefined });
  if (!check.consistent || check.updated) {
    return undefined; // decided again next tick, from the repaired store or after the RPC recovers
  }
  // The other side and the receiving chain's view as they are now, not as the batch or the tick read them.
  const again = await planFor(ctx, record, {
    ...p,
    viewOf: (chainId) => receivingView(ctx, chainId),
    counterpartOf: await prefetchCounterparts(ctx, [record]),
  });
  return again?.kind === "enqueue" && again.job.name === plan.job.name && again.job.chainId === plan.job.chainId
    ? again
    : undefined;
}

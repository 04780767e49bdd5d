import { errorMessage } from "../../shared/errors";
import { cancelMayUseBatchReads } from "../../shared/protocol/decision-reads";
import type { TransferRecord } from "../../shared/protocol/types";
import { headsOnce, oncePerChain, prefetchCounterparts, type CounterpartOf } from "./batch-reads";
import { cancelNeedsFreshRead, replanAfterFreshRead } from "./cancel-fresh-read";
import type { PollerContext } from "./context";
import { executePlan, type EnqueueOutcome } from "./plan-executor";
import { transferKeyOf, type ReceivingView } from "./plan-action";
import { planFor, receivingView } from "./plan-record";
import { tryReconcile, type ReconcileOptions } from "./reconcile";
import { clearReconcileRequest, readReconcileRequest } from "./reconcile-request";
import { dropHoldUnlessHonoured, dropSenderHold } from "./sender-hold";

export interface Decided {
  readonly open: number;
  readonly enqueued: number;
}

/**
 * Open records decided as one batch: their other sides are read in one MGET (batch-reads.ts), and when a
 * reconcile is due they are reconciled concurrently first, with one head read per chain. One after another the
 * reconciles (two eth_calls and two head reads per record) held a tick for minutes on a slow public RPC with
 * many transfers open (1 000 records × 4 calls × 50 ms ≈ 200 s), and every new transfer's decision behind them.
 * The batch's records are then decided in order, each right after its batch's reads. Eight at a time keeps the
 * burst within what a rate-limited public RPC answers.
 */
export const DECISION_BATCH_SIZE = 8;

/** Step 4 of the tick (tick.ts): every open record of this chain decided, batch by batch. */
export async function decideOpenTransfers(
  ctx: PollerContext,
  p: { head: number; nowSec: number; source: string },
  signal: AbortSignal,
): Promise<Decided> {
  const open = await ctx.store.listOpen(ctx.chainId);
  const viewOf = oncePerChain((chainId) => receivingView(ctx, chainId));
  let enqueued = 0;
  const operatorRequest = await readReconcileRequest(ctx);
  if (operatorRequest !== undefined) {
    ctx.reconcile.requestAll();
  }
  const reconcileAll = ctx.reconcile.allDue(Date.now());
  // Enqueues are idempotent but not fenced: a poller that lost its lease (or woke up from a pause past it)
  // decides nothing more, before the lease keeper has even aborted this tick.
  const stopped = (): boolean => signal.aborted || ctx.fence() === undefined;
  for (let start = 0; start < open.length && !stopped(); start += DECISION_BATCH_SIZE) {
    const batch = open.slice(start, start + DECISION_BATCH_SIZE);
    const headOf = headsOnce(ctx);
    const readAtMs = Date.now(); // the batch's oldest read: a cancel decided too long after it reads again
    const checks = reconcileAll
      ? await Promise.allSettled(batch.map((listed) => reconciledRecord(ctx, listed, { headOf })))
      : batch.map((listed) => ({ status: "fulfilled" as const, value: { record: listed, fresh: false } }));
    const counterpartOf = await prefetchCounterparts(
      ctx,
      checks.map((check) => (check.status === "fulfilled" ? check.value.record : undefined)),
    );
    for (const [i, listed] of batch.entries()) {
      if (stopped()) {
        break;
      }
      const outcome = await decideOne(ctx, { listed, check: checks[i], readAtMs, viewOf, counterpartOf, ...p });
      enqueued += outcome === "added" || outcome === "retried" ? 1 : 0;
    }
  }
  if (reconcileAll && !stopped()) {
    ctx.reconcile.allDone(Date.now());
    if (operatorRequest !== undefined) {
      await clearReconcileRequest(ctx, operatorRequest);
    }
  }
  return { open: open.length, enqueued };
}

/** One open record, after its reconcile (when one was due): plan, the fresh read a cancel needs, enqueue. */
async function decideOne(
  ctx: PollerContext,
  p: {
    listed: TransferRecord;
    check: PromiseSettledResult<{ record?: TransferRecord; fresh: boolean }>;
    /** When the batch's reads (reconcile, other sides) started. */
    readAtMs: number;
    viewOf: (chainId: number) => Promise<ReceivingView>;
    counterpartOf: CounterpartOf;
    head: number;
    nowSec: number;
    source: string;
  },
): Promise<EnqueueOutcome | undefined> {
  const transferKey = transferKeyOf(p.listed);
  try {
    if (p.check.status === "rejected") {
      throw p.check.reason;
    }
    const checked = p.check.value;
    if (checked.record === undefined) {
      await dropSenderHold(ctx, p.listed);
      return undefined; // no longer open: a missed fulfill or cancel was just stored
    }
    if (ctx.reconcile.onHold(transferKey)) {
      ctx.logger.trace("held: the store disagrees with the contract", {
        at: "poller.decide",
        chainId: ctx.chainId,
        transferKey,
      });
      return undefined;
    }
    let plan = await planFor(ctx, checked.record, p);
    if (
      plan?.kind === "enqueue" &&
      !cancelMayUseBatchReads({ fresh: checked.fresh, readAtMs: p.readAtMs }, Date.now()) &&
      (await cancelNeedsFreshRead(ctx, plan, transferKey))
    ) {
      plan = await replanAfterFreshRead(ctx, checked.record, plan, p);
    }
    await dropHoldUnlessHonoured(ctx, checked.record, plan);
    return plan === undefined ? undefined : await executePlan(ctx, plan, { transferKey, source: p.source });
  } catch (err) {
    // One bad record must not hold up the others; it is decided again next tick.
    ctx.logger.error("decision failed", {
      at: "poller.decide",
      chainId: ctx.chainId,
      transferKey,
      error: errorMessage(err),
    });
    return undefined;
  }
}

async function reconciledRecord(
  ctx: PollerContext,
  record: TransferRecord,
  opts: ReconcileOptions,
): Promise<{ record?: TransferRecord; fresh: boolean }> {
  const result = await tryReconcile(ctx, record, opts);
  if (!result.updated) {
    return { record, fresh: result.consistent };
  }
  const current = await ctx.store.get(ctx.chainId, record.txData.transactionId, record.txData.user);
  return { record: current?.status === "Prepared" ? current : undefined, fresh: result.consistent };
}

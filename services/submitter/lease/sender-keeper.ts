import type { Queue, Worker } from "bullmq";
import type { ReplicationGuard } from "../../../shared/coordination/replication";
import type { TxJobData, TxJobResult } from "../../../shared/queues";
import type { SubmitterContext } from "../context";
import type { LiquidityHolds } from "../liquidity-in-flight";
import type { SenderTermStuckError } from "../send/errors";
import { beginSenderTerm } from "./begin-sender-term";
import type { JobRuns } from "./job-runs";
import { createLeaseKeeper, type LeaseKeeper } from "./lease-keeper";
import { startNonceGapTracker, type NonceGapTracker } from "./nonce-gap-tracker";
import type { SenderLease } from "./sender-lease";

/**
 * The sender lease's keeper: a term begins (beginSenderTerm, then the nonce-gap tracker) once this process holds
 * the lease, and ends (tracker stopped, worker paused, every run handed back) when it loses or drops it.
 */
export function createSenderKeeper(p: {
  ctx: SubmitterContext;
  lease: SenderLease;
  queue: Queue;
  worker: Worker<TxJobData, TxJobResult, string>;
  runs: JobRuns;
  holds: LiquidityHolds;
  leaseReplication: ReplicationGuard | undefined;
  leaseTtlMs: number;
  /** A nonce gap open this long is filled; the chain's confirmationTimeoutMs by default. */
  nonceGapBoundMs?: number;
  /** A term that cannot end (SENDER_TERM_STUCK): main.ts crashes the process so PM2 restarts it. */
  onStuck?: (err: SenderTermStuckError) => void;
}): { keeper: LeaseKeeper; stopGapTracker(): void } {
  const { ctx, worker } = p;
  const gapBoundMs = p.nonceGapBoundMs ?? ctx.chain.confirmationTimeoutMs;
  let gapTracker: NonceGapTracker | undefined;
  const keeper = createLeaseKeeper({
    lease: p.lease,
    logger: ctx.logger,
    intervalMs: Math.max(50, Math.floor(p.leaseTtlMs / 4)),
    onBegin: async (fence, signal) => {
      await beginSenderTerm({ ...p, fence });
      gapTracker = startNonceGapTracker(ctx, {
        boundMs: gapBoundMs,
        intervalMs: Math.min(1000, Math.max(50, Math.floor(gapBoundMs / 4))),
        signal,
      });
    },
    onEnd: async () => {
      gapTracker?.stop();
      // No new fetch; a job fetched meanwhile runs under the aborted signal and hands itself back at once. The
      // term ends once every run has handed its job back. Not `worker.pause()`: it waits on the blocking
      // connection, and never returns when Redis fails over at that moment (lease/job-runs.ts).
      await worker.pause(true);
      await p.runs.drained();
    },
    onStuck: (err) => p.onStuck?.(err),
  });
  return { keeper, stopGapTracker: () => gapTracker?.stop() };
}

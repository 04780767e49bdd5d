import { errorCode, errorMessage } from "../../../shared/errors";
import { fillNonceGap, settleMinedFillers } from "../send/fill-nonce-gap";
import type { SendContext } from "../send/send-context";
import { createThrottle } from "../send/timing";

export interface NonceGapTracker {
  stop(): void;
}

const WARN_INTERVAL_MS = 30_000;

/**
 * Runs in the sender lease holder for the length of its term. A gap is the chain's pending count staying
 * below the stored next nonce (nonces handed out whose transactions no node has) for longer than `boundMs`:
 * every transaction above it waits forever. The lowest missing nonce is then filled (send/fill-nonce-gap.ts),
 * and again after each further bound while the count has not moved.
 */
export function startNonceGapTracker(
  ctx: SendContext,
  p: { boundMs: number; intervalMs: number; signal: AbortSignal },
): NonceGapTracker {
  let gapAt: number | undefined;
  let sinceMs = 0;
  let prunedBelow = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const shouldWarn = createThrottle(WARN_INTERVAL_MS);
  // Fillers to name to the ledger once mined (settleMinedFillers): looked for at the term's first check (a filler a
  // previous process sent), after each fill, and before the index that names them is pruned.
  let fillersToSettle = ctx.ledger !== undefined;

  const check = async (): Promise<void> => {
    const [stored, pending] = await Promise.all([ctx.nonces.get(), ctx.nonces.pendingCount()]);
    const prune = pending > prunedBelow + 100;
    if (prune || fillersToSettle) {
      // Only mined nonces: an entry of a transaction still in a mempool is what a withdrawal with no record checks
      // its in-flight transactions against (operations/find-own-withdrawal.ts).
      const mined = await ctx.provider.getTransactionCount(ctx.from, "latest");
      if (ctx.ledger !== undefined) {
        fillersToSettle = (await settleMinedFillers(ctx, mined)) > 0;
      }
      if (prune && !fillersToSettle) {
        prunedBelow = pending;
        await ctx.records.pruneNonceIndex(ctx.from, Math.min(mined, pending - 1));
      }
    }
    if (stored === undefined || pending >= stored) {
      gapAt = undefined;
      return;
    }
    const nowMs = Date.now();
    if (gapAt !== pending) {
      gapAt = pending;
      sinceMs = nowMs;
      return;
    }
    if (nowMs - sinceMs < p.boundMs || p.signal.aborted) {
      return;
    }
    ctx.logger.warn("nonce gap: the chain's count stays below the nonces handed out; filling the lowest", {
      at: "submitter.gap",
      nonce: pending,
      stored,
      openForMs: nowMs - sinceMs,
    });
    sinceMs = nowMs;
    await fillNonceGap(ctx, pending);
    fillersToSettle = ctx.ledger !== undefined;
  };
  const schedule = (): void => {
    if (stopped) {
      return;
    }
    timer = setTimeout(() => {
      check()
        .catch((err: unknown) => {
          if (shouldWarn()) {
            ctx.logger.warn("nonce gap check failed", {
              at: "submitter.gap",
              code: errorCode(err),
              error: errorMessage(err),
            });
          }
        })
        .finally(schedule);
    }, p.intervalMs);
  };
  schedule();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

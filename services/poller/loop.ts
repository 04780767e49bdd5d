import { errorMessage } from "../../shared/errors";
import type { PollerContext } from "./context";
import { runTick, type TickResult } from "./tick";
import { abortableDelay } from "../../shared/timing";

export interface PollLoopOptions {
  /** How often eth_blockNumber is polled for a new block. */
  readonly intervalMs: number;
  /** A tick runs at least this often even without a new block (e.g. a chain that mines on demand). */
  readonly maxIdleMs: number;
  /** Called after each successful tick (tests, metrics). */
  readonly onTick?: (result: TickResult) => void;
}

/** While a tick keeps failing, its error is logged once per this window, not once per poll. */
const FAILURE_LOG_WINDOW_MS = 60_000;

/**
 * The poller's cadence: a sequential loop, never setInterval, so two ticks never overlap. Each iteration polls
 * the head and runs a tick when something can have changed: a new (or re-orged) block here, a new head stored by another
 * chain's poller (a receiving side may have been fulfilled there), the previous tick failed, or `maxIdleMs`
 * passed. Otherwise it only re-stamps this chain's head as current, so other pollers can tell it is alive.
 * Resolves once `signal` aborts (after the running tick reaches a safe point).
 */
export async function runPollLoop(ctx: PollerContext, opts: PollLoopOptions, signal: AbortSignal): Promise<void> {
  let last: TickResult | undefined;
  let lastOk = false;
  let lastFingerprint = "";
  let lastHeadHash: string | null | undefined;
  let lastTickAtMs = 0;
  let tickNumber = 0;
  const failures = createFailureLog(ctx);
  while (!signal.aborted) {
    try {
      // The latest block rather than its number alone: a re-org to the same height (anvil, a 1-block re-org) is
      // noticed at once, not only at the next block or idle tick.
      const latest = await ctx.provider.getBlock("latest");
      if (latest === null) {
        throw new Error("latest block not found");
      }
      const head = latest.number;
      const fingerprint = await otherHeadsFingerprint(ctx);
      const due =
        !lastOk ||
        head !== last?.head ||
        latest.hash !== lastHeadHash ||
        fingerprint !== lastFingerprint ||
        Date.now() - lastTickAtMs >= opts.maxIdleMs;
      if (due) {
        lastOk = false;
        last = await runTick(ctx, { head, nowSec: latest.timestamp, tickNumber }, signal);
        tickNumber += 1;
        lastOk = true;
        lastFingerprint = fingerprint;
        lastHeadHash = latest.hash;
        lastTickAtMs = Date.now();
        failures.recovered();
        opts.onTick?.(last);
      } else if (last !== undefined) {
        await ctx.store.setHead(ctx.chainId, {
          blockNumber: last.head,
          timestamp: last.nowSec,
          syncedBlock: last.syncedBlock,
        });
      }
    } catch (err) {
      if (signal.aborted) {
        break;
      }
      failures.report(err);
    }
    await abortableDelay(opts.intervalMs, signal);
  }
}

/** Other configured chains' stored heads: a change means their pollers stored something new. */
async function otherHeadsFingerprint(ctx: PollerContext): Promise<string> {
  const others = Object.values(ctx.config.chainConfig).filter((c) => c.chainId !== ctx.chainId);
  const heads = await Promise.all(others.map((c) => ctx.store.getHead(c.chainId)));
  return heads.map((h, i) => `${others[i].chainId}:${h?.blockNumber ?? "-"}:${h?.syncedBlock ?? "-"}`).join(",");
}

function createFailureLog(ctx: PollerContext): { report(err: unknown): void; recovered(): void } {
  let failingSinceMs: number | undefined;
  let loggedAtMs = 0;
  let suppressed = 0;
  return {
    report: (err) => {
      const now = Date.now();
      failingSinceMs ??= now;
      if (now - loggedAtMs < FAILURE_LOG_WINDOW_MS) {
        suppressed += 1;
        return;
      }
      ctx.logger.error("tick failed; retrying", {
        at: "poller.tick",
        chainId: ctx.chainId,
        error: errorMessage(err),
        failingForMs: now - failingSinceMs,
        suppressedRepeats: suppressed,
      });
      loggedAtMs = now;
      suppressed = 0;
    },
    recovered: () => {
      if (failingSinceMs !== undefined) {
        ctx.logger.info("tick succeeded again", {
          at: "poller.tick",
          chainId: ctx.chainId,
          failedForMs: Date.now() - failingSinceMs,
        });
      }
      failingSinceMs = undefined;
      loggedAtMs = 0;
      suppressed = 0;
    },
  };
}

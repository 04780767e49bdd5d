import { errorMessage } from "../../shared/errors";
import { reconcileRequestKey } from "../../shared/coordination/keys";
import { DELETE_IF_EQUAL } from "../../shared/redis/common-scripts";
import type { PollerContext } from "./context";

/**
 * An operator's POST /process-active-transactions (services/admin/operations/process-active-transactions.ts): the
 * request's value when one is pending for this chain, and then the tick reconciles every open record. A Redis
 * error only skips it for this tick.
 */
export async function readReconcileRequest(ctx: PollerContext): Promise<string | undefined> {
  try {
    const value = await ctx.redis.get(reconcileRequestKey(ctx.config.redisPrefix, ctx.chainId));
    if (value !== null) {
      ctx.logger.info("operator asked to handle every open transfer again: reconciling all this tick", {
        at: "poller.reconcileRequest",
        chainId: ctx.chainId,
        requestedAtMs: Number(value),
      });
    }
    return value ?? undefined;
  } catch (err) {
    ctx.logger.warn("could not read the reconcile request", {
      at: "poller.reconcileRequest",
      error: errorMessage(err),
    });
    return undefined;
  }
}

/** After a tick that reconciled and decided every open record: the request is done. */
export async function clearReconcileRequest(ctx: PollerContext, value: string): Promise<void> {
  try {
    // Only if no newer request replaced it while this tick ran.
    const target = reconcileRequestKey(ctx.config.redisPrefix, ctx.chainId);
    await DELETE_IF_EQUAL.run(ctx.redis, { keys: { target }, args: { expected: value } });
    ctx.logger.info("every open transfer reconciled and decided again", {
      at: "poller.reconcileRequest",
      chainId: ctx.chainId,
      requestedAtMs: Number(value),
    });
  } catch (err) {
    // Kept: the next tick reconciles everything once more, which is harmless.
    ctx.logger.warn("could not clear the reconcile request", {
      at: "poller.reconcileRequest",
      error: errorMessage(err),
    });
  }
}

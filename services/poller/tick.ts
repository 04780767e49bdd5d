import { errorMessage } from "../../shared/errors";
import type { TransferRecord } from "../../shared/protocol/types";
import { refreshBalances } from "./balances";
import type { PollerContext } from "./context";
import { decideOpenTransfers } from "./decide-open";
import { transferKeyOf } from "./plan-action";
import { pullChanges } from "./pull-changes";
import type { TransferSource } from "./sources/transfer-source";

export interface TickInput {
  readonly head: number;
  /**
   * The head block's timestamp, from the block the loop read to decide the tick was due (loop.ts): read again
   * here, it was one more round trip to the RPC before anything was pulled, in every tick.
   */
  readonly nowSec: number;
  /** 0 for the first tick of the process: balances are refreshed then and every `balanceEveryTicks`. */
  readonly tickNumber: number;
}

export interface TickResult {
  readonly head: number;
  /** The head block's timestamp: the tick's `now`. */
  readonly nowSec: number;
  readonly syncedBlock: number;
  readonly source: TransferSource["name"];
  readonly recordsChanged: number;
  readonly liquidityEvents: number;
  readonly open: number;
  readonly enqueued: number;
  readonly durationMs: number;
}

/**
 * One sequential tick:
 * 1. `nowSec`: the head block's timestamp (input), not the wall clock, because expiries are checked by the
 *    contract against block time (and anvil's evm_increaseTime only moves block time);
 * 2. pull every confirmed change from the source into the store (cursor moves after each stored range);
 * 3. store the head with the block up to which the store is complete (other chains' pollers read it);
 * 4. decide every open record of this chain and enqueue the action's job under its deterministic id; when due
 *    (first tick, every reconcile interval, after a rewind, on an operator's request: reconcile-request.ts) each
 *    record is first reconciled against the contract on both chains (DECISION_BATCH_SIZE records at once, each
 *    decided right after its batch),
 *    held records are skipped, and a cancel needs a reconcile at most MAX_CANCEL_READ_AGE_MS old (reconcile.ts,
 *    shared/protocol/decision-reads.ts);
 * 5. refresh balances every N ticks, or when liquidity or a transfer changed.
 * Abortable between ranges and between records; an error fails the tick, and the loop runs it again.
 */
export async function runTick(ctx: PollerContext, input: TickInput, signal: AbortSignal): Promise<TickResult> {
  const startedAtMs = Date.now();
  const { nowSec } = input;
  const confirmedHead = input.head - ctx.chain.confirmations + 1;
  const pulled = await pullChanges(ctx, { head: input.head, confirmedHead, nowSec, signal });
  await ctx.store.setHead(ctx.chainId, { blockNumber: input.head, timestamp: nowSec, syncedBlock: pulled.syncedBlock });

  const decided = await decideOpenTransfers(ctx, { head: input.head, nowSec, source: pulled.source }, signal);

  const due = input.tickNumber % ctx.balanceEveryTicks === 0 || pulled.recordsChanged > 0 || pulled.liquidityEvents > 0;
  if (due || (await balancesOlderThan(ctx, ctx.balanceMaxIntervalMs))) {
    const refreshed = await refreshBalances(ctx).then(
      () => true,
      (err: unknown) => {
        ctx.logger.warn("balance refresh failed", { at: "poller.balances", error: errorMessage(err) });
        return false;
      },
    );
    if (refreshed) {
      await releaseReservations(ctx, pulled.receiverPrepares);
    }
  }
  const { source, syncedBlock, recordsChanged, liquidityEvents } = pulled;
  const result: TickResult = {
    head: input.head,
    nowSec,
    source,
    syncedBlock,
    recordsChanged,
    liquidityEvents,
    ...decided,
    durationMs: Date.now() - startedAtMs,
  };
  ctx.logger.debug("tick", { at: "poller.tick", ...result });
  return result;
}

/** After a balance refresh that already reflects these receiving prepares' locks, their reservations would count twice. */
async function releaseReservations(ctx: PollerContext, records: readonly TransferRecord[]): Promise<void> {
  for (const record of records) {
    try {
      await ctx.reservations.release(ctx.chainId, record.txData.receivingAssetId, transferKeyOf(record));
    } catch (err) {
      ctx.logger.warn("reservation release failed", {
        at: "poller.reservation",
        transferKey: transferKeyOf(record),
        error: errorMessage(err),
      });
    }
  }
}

async function balancesOlderThan(ctx: PollerContext, maxAgeMs: number): Promise<boolean> {
  const gas = await ctx.balances.getGasBalance(ctx.chainId).catch(() => undefined);
  return gas === undefined || Date.now() - gas.updatedAtMs >= maxAgeMs;
}

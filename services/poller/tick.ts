import { errorMessage } from "../../shared/errors";
import type { TransferRecord } from "../../shared/protocol/types";
import { refreshBalances } from "./balances";
import type { PollerContext } from "./context";
import { planReceiverSide, planSenderSide, transferKeyOf, type Plan, type ReceivingView } from "./plan-action";
import { executePlan, type EnqueueOutcome } from "./plan-executor";
import { SyncAbortedError, type SourceBatch, type TransferSource } from "./sources/transfer-source";

export interface TickInput {
  readonly head: number;
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
 * 1. head block → `nowSec`: the chain's latest block timestamp, not the wall clock, because expiries are
 *    checked by the contract against block time (and anvil's evm_increaseTime only moves block time);
 * 2. pull every confirmed change from the source into the store (cursor moves after each stored range);
 * 3. store the head with the block up to which the store is complete (other chains' pollers read it);
 * 4. decide every open record of this chain and enqueue the action's job under its deterministic id;
 * 5. refresh balances every N ticks, or when liquidity or a transfer changed.
 * Abortable between ranges and between records; an error fails the tick, and the loop runs it again.
 */
export async function runTick(ctx: PollerContext, input: TickInput, signal: AbortSignal): Promise<TickResult> {
  const startedAtMs = Date.now();
  const block = await ctx.provider.getBlock(input.head);
  if (block === null) {
    throw new Error(`head block ${input.head} not found`);
  }
  const nowSec = block.timestamp;
  const confirmedHead = input.head - ctx.chain.confirmations + 1;
  const pulled = await pullChanges(ctx, { head: input.head, confirmedHead, signal });
  await ctx.store.setHead(ctx.chainId, { blockNumber: input.head, timestamp: nowSec, syncedBlock: pulled.syncedBlock });

  const decided = await decideOpenTransfers(ctx, { head: input.head, nowSec, source: pulled.source }, signal);

  if (input.tickNumber % ctx.balanceEveryTicks === 0 || pulled.recordsChanged > 0 || pulled.liquidityEvents > 0) {
    await refreshBalances(ctx).catch((err: unknown) => {
      ctx.logger.warn("balance refresh failed", { at: "poller.balances", error: errorMessage(err) });
    });
  }
  const result: TickResult = { head: input.head, nowSec, ...pulled, ...decided, durationMs: Date.now() - startedAtMs };
  ctx.logger.debug("tick", { at: "poller.tick", ...result });
  return result;
}

interface Pulled {
  readonly source: TransferSource["name"];
  readonly syncedBlock: number;
  readonly recordsChanged: number;
  readonly liquidityEvents: number;
}

async function pullChanges(ctx: PollerContext, p: { head: number; confirmedHead: number; signal: AbortSignal }): Promise<Pulled> {
  let recordsChanged = 0;
  let liquidityEvents = 0;
  const sink = async (batch: SourceBatch): Promise<void> => {
    for (const record of batch.records) {
      const outcome = await ctx.store.put(record);
      if (outcome === "created" || outcome === "updated") {
        recordsChanged += 1;
        ctx.logger.debug("transfer record stored", {
          at: "poller.record", transferKey: transferKeyOf(record), recordChainId: record.chainId, status: record.status, outcome,
        });
      }
    }
    for (const event of batch.liquidityEvents) {
      liquidityEvents += 1;
      ctx.logger.info(`liquidity ${event.kind}`, { at: "poller.liquidity", chainId: ctx.chainId, ...event });
    }
  };
  const source = await ctx.sources.select(p.head);
  const run = async (s: TransferSource): Promise<Pulled> => {
    const { syncedBlock } = await s.sync({ ...p, sink });
    return { source: s.name, syncedBlock, recordsChanged, liquidityEvents };
  };
  try {
    return await run(source);
  } catch (err) {
    if (source.name !== "subgraph" || err instanceof SyncAbortedError) {
      throw err;
    }
    // Whatever the subgraph stored before failing is still correct (confirmed, status only moves forward).
    return run(ctx.sources.fallBack(err));
  }
}

interface Decided {
  readonly open: number;
  readonly enqueued: number;
}

async function decideOpenTransfers(
  ctx: PollerContext,
  p: { head: number; nowSec: number; source: string },
  signal: AbortSignal,
): Promise<Decided> {
  const open = await ctx.store.listOpen(ctx.chainId);
  const views = new Map<number, Promise<ReceivingView>>();
  const viewOf = (chainId: number): Promise<ReceivingView> => {
    let view = views.get(chainId);
    if (view === undefined) {
      view = receivingView(ctx, chainId);
      views.set(chainId, view);
    }
    return view;
  };
  let enqueued = 0;
  for (const record of open) {
    if (signal.aborted) {
      break;
    }
    const transferKey = transferKeyOf(record);
    try {
      const plan = await planFor(ctx, record, { ...p, viewOf });
      const outcome: EnqueueOutcome | undefined = plan === undefined ? undefined : await executePlan(ctx, plan, { transferKey, source: p.source });
      enqueued += outcome === "added" || outcome === "retried" ? 1 : 0;
    } catch (err) {
      // One bad record must not hold up the others; it is decided again next tick.
      ctx.logger.error("decision failed", { at: "poller.decide", chainId: ctx.chainId, transferKey, error: errorMessage(err) });
    }
  }
  return { open: open.length, enqueued };
}

async function planFor(
  ctx: PollerContext,
  record: TransferRecord,
  p: { head: number; nowSec: number; viewOf: (chainId: number) => Promise<ReceivingView> },
): Promise<Plan | undefined> {
  const { transactionId, user, sendingChainId, receivingChainId } = record.txData;
  if (sendingChainId === ctx.chainId) {
    const configured = ctx.config.chainConfig[String(receivingChainId)] !== undefined;
    const receiver = configured ? await ctx.store.get(receivingChainId, transactionId, user) : undefined;
    const receiving = configured ? await p.viewOf(receivingChainId) : undefined;
    return planSenderSide(ctx, { sender: record, receiver, nowSec: p.nowSec, head: p.head, receiving });
  }
  if (receivingChainId === ctx.chainId) {
    const configured = ctx.config.chainConfig[String(sendingChainId)] !== undefined;
    const sender = configured ? await ctx.store.get(sendingChainId, transactionId, user) : undefined;
    return planReceiverSide(ctx, { receiver: record, sender, nowSec: p.nowSec });
  }
  ctx.logger.warn("record on a chain that is neither its sending nor its receiving chain", {
    at: "poller.decide", chainId: ctx.chainId, transferKey: transferKeyOf(record),
  });
  return undefined;
}

/** The receiving chain through the store: its head, and whether its poller refreshed that view recently. */
async function receivingView(ctx: PollerContext, chainId: number): Promise<ReceivingView> {
  const head = await ctx.store.getHead(chainId);
  const confirmations = ctx.config.chainConfig[String(chainId)]?.confirmations ?? 1;
  const fresh = head !== undefined && head.syncedBlock !== undefined && Date.now() - head.updatedAtMs <= ctx.receivingStaleMs;
  return { head, confirmations, fresh };
}

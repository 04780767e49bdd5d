import { errorMessage } from "../../shared/errors";
import type { TransferRecord } from "../../shared/protocol/types";
import { sameHex } from "../../shared/protocol/values";
import { TX_JOB, txJobId } from "../../shared/queues";
import { refreshBalances } from "./balances";
import type { PollerContext } from "./context";
import { planReceiverSide, planSenderSide, transferKeyOf, type Plan, type ReceivingView } from "./plan-action";
import { cancelMayUseBatchReads } from "../../shared/protocol/decision-reads";
import { headsOnce, oncePerChain, prefetchCounterparts, type CounterpartOf } from "./batch-reads";
import { executePlan, type EnqueueOutcome } from "./plan-executor";
import { LedgerNamingPendingError, nameToLedger } from "./ledger-naming";
import { dropHoldUnlessHonoured, dropSenderHold, holdForSender } from "./sender-hold";
import { tryReconcile, type ReconcileOptions } from "./reconcile";
import { clearReconcileRequest, readReconcileRequest } from "./reconcile-request";
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
  const block = await ctx.provider.getBlock(input.head);
  if (block === null) {
    throw new Error(`head block ${input.head} not found`);
  }
  const nowSec = block.timestamp;
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

interface Pulled {
  readonly source: TransferSource["name"];
  readonly syncedBlock: number;
  readonly recordsChanged: number;
  readonly liquidityEvents: number;
  /** Our receiving sides stored in this tick: their bids' reservations go once the balance shows the lock. */
  readonly receiverPrepares: readonly TransferRecord[];
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

/**
 * Another transfer under a stored one's (transactionId, user): the router keeps acting on the one it saw first
 * and never on this one (the store keeps the first). Reported once per transfer, at alert level: someone locked
 * funds under another transfer's id, which is either a mistake or an attempt to have the router claim it.
 */
async function reportSameIdTransfer(ctx: PollerContext, record: TransferRecord): Promise<void> {
  const key = transferKeyOf(record);
  const first = await ctx
    .alertOnce(`same-id:${record.chainId}:${key}:${record.txData.sendingChainFallback}`)
    .catch(() => true);
  if (!first) {
    return;
  }
  ctx.logger.error("another transfer under a stored transfer's id: ignored, the router acts only on the first", {
    at: "poller.sameIdTransfer",
    alert: true,
    transferKey: key,
    recordChainId: record.chainId,
    status: record.status,
    amount: record.txData.amount,
    sendingChainFallback: record.txData.sendingChainFallback,
  });
}

async function balancesOlderThan(ctx: PollerContext, maxAgeMs: number): Promise<boolean> {
  const gas = await ctx.balances.getGasBalance(ctx.chainId).catch(() => undefined);
  return gas === undefined || Date.now() - gas.updatedAtMs >= maxAgeMs;
}

async function pullChanges(
  ctx: PollerContext,
  p: { head: number; confirmedHead: number; nowSec: number; signal: AbortSignal },
): Promise<Pulled> {
  let recordsChanged = 0;
  let liquidityEvents = 0;
  const receiverPrepares: TransferRecord[] = [];
  const sink = async (batch: SourceBatch): Promise<void> => {
    await nameToLedger(ctx, batch); // before anything of the batch is stored: a refusal leaves it to be read again
    for (const record of batch.records) {
      const outcome = await ctx.store.put(record);
      if (outcome === "conflict") {
        await reportSameIdTransfer(ctx, record);
      }
      if (outcome === "created" || outcome === "updated") {
        recordsChanged += 1;
        if (sameHex(record.txData.router, ctx.routerAddress)) {
          if (record.chainId === record.txData.sendingChainId) {
            await holdForSender(ctx, record, p.nowSec);
          } else if (record.chainId === record.txData.receivingChainId) {
            // Any status: a receiving side first seen already fulfilled or cancelled was prepared too.
            receiverPrepares.push(record);
          }
        }
        ctx.logger.debug("transfer record stored", {
          at: "poller.record",
          transferKey: transferKeyOf(record),
          recordChainId: record.chainId,
          status: record.status,
          outcome,
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
    return { source: s.name, syncedBlock, recordsChanged, liquidityEvents, receiverPrepares };
  };
  try {
    try {
      return await run(source);
    } catch (err) {
      if (source.name !== "subgraph" || err instanceof SyncAbortedError || err instanceof LedgerNamingPendingError) {
        throw err;
      }
      // Whatever the subgraph stored before failing is still correct (confirmed, status only moves forward).
      return await run(ctx.sources.fallBack(err));
    }
  } catch (err) {
    if (!(err instanceof LedgerNamingPendingError)) {
      throw err;
    }
    // The ledger refused a batch (the producer logged and counted it): what is stored is decided as usual this
    // tick; the batch and everything after it are read again next tick. The store is complete only as far as
    // before this tick, so that is the synced block other chains' pollers read.
    const previous = (await ctx.store.getHead(ctx.chainId))?.syncedBlock;
    if (previous === undefined) {
      throw err;
    }
    return { source: source.name, syncedBlock: previous, recordsChanged, liquidityEvents, receiverPrepares };
  }
}

interface Decided {
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

async function decideOpenTransfers(
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

/**
 * A cancel whose batch reads are not fresh enough (cancelMayUseBatchReads: no agreeing reconcile, or one older
 * than MAX_CANCEL_READ_AGE_MS): both sides are reconciled against the chains again, and the record is planned
 * again from the store as that reconcile left it (the plan was made from the batch's MGET and the tick's view of
 * the receiving chain, which may be older). Only the same cancel goes ahead; anything else is decided next tick.
 */
async function replanAfterFreshRead(
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

/** The record after a reconcile of both sides; undefined when it is no longer open. `fresh`: both sides agree. */
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

/**
 * A cancel of either side is enqueued only after a fresh on-chain read of both sides (issue: a missed
 * receiving fulfill made the sending side look refundable). A cancel job that already exists and has not
 * failed needs no new read; a failed one would be retried, so it does.
 */
async function cancelNeedsFreshRead(ctx: PollerContext, plan: Plan, transferKey: string): Promise<boolean> {
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

async function planFor(
  ctx: PollerContext,
  record: TransferRecord,
  p: {
    head: number;
    nowSec: number;
    viewOf: (chainId: number) => Promise<ReceivingView>;
    counterpartOf: CounterpartOf;
  },
): Promise<Plan | undefined> {
  const { sendingChainId, receivingChainId } = record.txData;
  if (sendingChainId === ctx.chainId) {
    const configured = ctx.config.chainConfig[String(receivingChainId)] !== undefined;
    const receiver = await p.counterpartOf(record);
    const receiving = configured ? await p.viewOf(receivingChainId) : undefined;
    return planSenderSide(ctx, { sender: record, receiver, nowSec: p.nowSec, head: p.head, receiving });
  }
  if (receivingChainId === ctx.chainId) {
    const sender = await p.counterpartOf(record);
    return planReceiverSide(ctx, { receiver: record, sender, nowSec: p.nowSec });
  }
  ctx.logger.warn("record on a chain that is neither its sending nor its receiving chain", {
    at: "poller.decide",
    chainId: ctx.chainId,
    transferKey: transferKeyOf(record),
  });
  return undefined;
}

/** The receiving chain through the store: its head, and whether its poller refreshed that view recently. */
async function receivingView(ctx: PollerContext, chainId: number): Promise<ReceivingView> {
  const head = await ctx.store.getHead(chainId);
  const confirmations = ctx.config.chainConfig[String(chainId)]?.confirmations ?? 1;
  const fresh =
    head !== undefined && head.syncedBlock !== undefined && Date.now() - head.updatedAtMs <= ctx.receivingStaleMs;
  return { head, confirmations, fresh };
}

import type { TransferRecord } from "../../shared/protocol/types";
import { sameHex } from "../../shared/protocol/values";
import type { PollerContext } from "./context";
import { LedgerNamingPendingError, nameToLedger } from "./ledger-naming";
import { transferKeyOf } from "./plan-action";
import { holdForSender } from "./sender-hold";
import { SyncAbortedError, type SourceBatch, type TransferSource } from "./sources/transfer-source";

export interface Pulled {
  readonly source: TransferSource["name"];
  readonly syncedBlock: number;
  readonly recordsChanged: number;
  readonly liquidityEvents: number;
  /** Our receiving sides stored in this tick: their bids' reservations go once the balance shows the lock. */
  readonly receiverPrepares: readonly TransferRecord[];
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

/**
 * Step 2 of the tick (tick.ts): every confirmed change from the source into the store, each batch named to the
 * ledger first; the subgraph falls back to logs when it fails, and a batch the ledger refused is read again next tick.
 */
export async function pullChanges(
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

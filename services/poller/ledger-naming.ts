import { RouterError, errorClass } from "../../shared/errors";
import type { TransferRecord } from "../../shared/protocol/types";
import { sameHex } from "../../shared/protocol/values";
import type { BookTransactionJobData } from "../../shared/queues";
import type { PollerContext } from "./context";
import type { SourceBatch } from "./sources/transfer-source";

/**
 * Redis refused to name a batch's transactions to the ledger: nothing of the batch was stored and the source's
 * cursor did not move, so the next tick reads the same changes and names them again (pull-changes.ts).
 */
export class LedgerNamingPendingError extends errorClass(RouterError, "LEDGER_NAMING_PENDING", "retriable") {}

/**
 * The transactions of this router's TransactionManager events in what a source or a reconcile read: each record's
 * prepare, fulfill and cancel (the user's sending prepare and receiving fulfill included, which no submitter of
 * ours sent), and each LiquidityAdded / LiquidityRemoved. A record of another router is never named (the sources
 * filter by router already; this holds whatever a source or subgraph returns).
 */
export function ledgerNamesOf(
  ctx: Pick<PollerContext, "chainId" | "routerAddress">,
  batch: Pick<SourceBatch, "records"> & Partial<Pick<SourceBatch, "liquidityEvents">>,
): BookTransactionJobData[] {
  const names: BookTransactionJobData[] = [];
  const add = (chainId: number, hash: string | undefined, transactionId?: string): void => {
    if (hash !== undefined && hash !== "") {
      names.push({
        chainId,
        hash: hash.toLowerCase(),
        source: "poller",
        ...(transactionId !== undefined ? { transactionId: transactionId.toLowerCase() } : {}),
      });
    }
  };
  for (const record of batch.records) {
    if (!sameHex(record.txData.router, ctx.routerAddress)) {
      continue;
    }
    // The record's own chain: a reconcile also stores the other side of a transfer, on the other chain.
    const { transactionId } = record.txData;
    add(record.chainId, record.prepareTransactionHash, transactionId);
    add(record.chainId, completionHashOf(record), transactionId);
  }
  for (const event of batch.liquidityEvents ?? []) {
    add(ctx.chainId, event.transactionHash);
  }
  return names;
}

function completionHashOf(record: TransferRecord): string | undefined {
  if (record.status === "Fulfilled") {
    return record.fulfillTransactionHash;
  }
  return record.status === "Cancelled" ? record.cancelTransactionHash : undefined;
}

/**
 * Names what was read before any of it is stored (so before a cursor moves past it, and before a subgraph's
 * state-based listing stops returning it): a crash, a takeover or a refusal in between leaves the changes unread
 * as far as the store and cursor know, and they are read and named again. Repeats are harmless: one ledger job
 * per chain and hash, and the ledger's key. Without a ledger, nothing.
 */
export async function nameToLedger(
  ctx: Pick<PollerContext, "chainId" | "routerAddress" | "ledger">,
  batch: Pick<SourceBatch, "records"> & Partial<Pick<SourceBatch, "liquidityEvents">>,
): Promise<void> {
  if (ctx.ledger === undefined) {
    return;
  }
  const names = ledgerNamesOf(ctx, batch);
  if (names.length > 0 && !(await ctx.ledger.name(names))) {
    throw new LedgerNamingPendingError("could not name the batch's transactions to the ledger; read again next tick", {
      transactions: names.length,
    });
  }
}

import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import { errorMessage } from "../../shared/errors";
import { readSwapRows } from "../../shared/ledger/swap-reads";
import { routerMetrics } from "../../shared/metrics/router-metrics";
import { swapViewOf } from "../../shared/protocol/ledger";
import { BOOK_TRANSACTION_SCHEMA, LEDGER_JOB, type BookTransactionJobData } from "../../shared/queues/ledger-jobs";
import {
  bookTransaction,
  LedgerJobRefusedError,
  ReceiptNotReadyError,
  type BookTransactionDeps,
  type BookTransactionResult,
} from "../../shared/ledger/book-transaction";

export interface LedgerProcessorDeps extends BookTransactionDeps {
  readonly receiptRetryDelayMs: number;
  readonly receiptAttempts: number;
}

export interface LedgerJobResult {
  readonly outcome: BookTransactionResult["outcome"];
  readonly transactionInserted: boolean;
  readonly eventsInserted: number;
}

/**
 * The BullMQ processor of the ledger queue. A receipt not there yet (not mined, not confirmed, a lagging node)
 * parks the job for `receiptRetryDelayMs` without using an attempt, up to `receiptAttempts` looks (counted in
 * the job's progress); then it fails for the operator to see. A malformed job or an unknown chain fails at once.
 * Metrics move only for rows this run inserted, so they equal the sum of the booked rows.
 */
export function createLedgerProcessor(deps: LedgerProcessorDeps) {
  return async (
    job: Job<BookTransactionJobData, LedgerJobResult, string>,
    token?: string,
  ): Promise<LedgerJobResult> => {
    if (job.name !== LEDGER_JOB.bookTransaction) {
      throw new UnrecoverableError(`unknown ledger job ${job.name}`);
    }
    const { value, error } = BOOK_TRANSACTION_SCHEMA.validate(job.data, { abortEarly: false });
    if (error) throw new UnrecoverableError(`invalid book-transaction job: ${error.message}`);
    try {
      const result = await bookTransaction(deps, value);
      recordMetrics(result);
      if (result.insertedEvents.some((e) => e.side === "sending" && e.event === "fulfilled")) {
        await observeCompletedSwaps(deps, result);
      }
      deps.logger.info("ledger: transaction booked", {
        at: "ledger.book",
        chainId: value.chainId,
        hash: value.hash,
        source: value.source,
        outcome: result.outcome,
        costWei: result.transactionInserted ? result.transaction?.costWei.toString() : undefined,
        eventsInserted: result.insertedEvents.length,
      });
      return {
        outcome: result.outcome,
        transactionInserted: result.transactionInserted,
        eventsInserted: result.insertedEvents.length,
      };
    } catch (err) {
      if (err instanceof LedgerJobRefusedError) throw new UnrecoverableError(err.message);
      if (!(err instanceof ReceiptNotReadyError) || token === undefined) throw err;
      const looks = (typeof job.progress === "number" ? job.progress : 0) + 1;
      if (looks >= deps.receiptAttempts) {
        throw new UnrecoverableError(`no confirmed receipt after ${looks} looks: ${err.message}`);
      }
      await job.updateProgress(looks);
      await job.moveToDelayed(Date.now() + deps.receiptRetryDelayMs, token);
      deps.logger.debug("ledger: receipt not ready; looking again later", {
        at: "ledger.book",
        chainId: value.chainId,
        hash: value.hash,
        looks,
        reason: errorMessage(err),
      });
      throw new DelayedError();
    }
  };
}

function recordMetrics(result: BookTransactionResult): void {
  const m = routerMetrics();
  m.ledgerBooked.inc({ result: result.outcome });
  const t = result.transaction;
  if (result.transactionInserted && t !== undefined) {
    const labels = { chain: String(t.chainId), kind: t.kind ?? "unknown" };
    m.gasSpentWei.inc(labels, Number(t.costWei));
    if (t.costUsd !== null) m.gasSpentUsd.inc(labels, Number(t.costUsd));
  }
}

/** A claim booked: the swap is complete; its fee and net go to the metrics when priced. */
async function observeCompletedSwaps(deps: LedgerProcessorDeps, result: BookTransactionResult): Promise<void> {
  const m = routerMetrics();
  const ids = new Set(
    result.insertedEvents
      .filter((e) => e.side === "sending" && e.event === "fulfilled" && e.transactionId !== null)
      .map((e) => e.transactionId as string),
  );
  for (const id of ids) {
    try {
      const view = swapViewOf({ transactionId: id, signer: deps.signer, ...(await readSwapRows(deps.pool, id)) });
      // A counter cannot go down: a claim below its receiving amount (never expected) shows in the histogram only.
      if (view?.usd.feeEarned !== null && view?.usd.feeEarned !== undefined && view.usd.feeEarned > 0) {
        m.feesEarnedUsd.inc(view.usd.feeEarned);
      }
      if (view?.usd.net !== null && view?.usd.net !== undefined) m.swapNetUsd.observe(view.usd.net);
    } catch (err) {
      deps.logger.warn("ledger: completed swap not observed in the metrics", {
        at: "ledger.metrics",
        transactionId: id,
        error: errorMessage(err),
      });
    }
  }
}

import type { LedgerPool } from "../../shared/ledger/database";
import { errorMessage } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import { routerMetrics } from "../../shared/metrics/router-metrics";
import { usdOf, usdPerToken } from "../../shared/protocol/ledger";
import type { LedgerPricer } from "../../shared/ledger/prices";

/** Rows priced per table per pass: bounded, so one pass never holds the oracle or the database for long. */
const BATCH = 200;

interface UnpricedTx {
  chain_id: number;
  hash: string;
  block_number: string;
  time: number;
  cost_wei: string;
  kind: string | null;
}

interface UnpricedEvent {
  chain_id: number;
  tx_hash: string;
  log_index: number;
  block_number: string;
  time: number;
  asset_id: string;
  asset_decimals: number;
  amount: string;
  relayer_fee: string | null;
}

/**
 * One repricing pass (docs/accounting.md "Pricing"): the rows booked without a USD price are priced at their
 * own time, as at booking. Each update only fills a NULL (`WHERE … IS NULL`), so two passes, or two ledger
 * instances, never price a row twice; the USD gas counter moves only for the row the update filled.
 * Returns how many rows are still unpriced.
 */
export async function repriceOnce(pool: LedgerPool, pricer: LedgerPricer): Promise<number> {
  const m = routerMetrics();
  const txs = await pool.query<UnpricedTx>(
    `SELECT chain_id, hash, block_number, extract(epoch FROM block_time)::bigint AS time, cost_wei, kind
       FROM ledger_transactions WHERE cost_usd IS NULL ORDER BY block_time LIMIT ${BATCH}`,
  );
  for (const t of txs.rows) {
    const price = await pricer.native({
      chainId: t.chain_id,
      blockNumber: Number(t.block_number),
      time: Number(t.time),
    });
    if (price === undefined) continue;
    const costUsd = usdOf(BigInt(t.cost_wei), 18, price);
    const updated = await pool.query(
      `UPDATE ledger_transactions SET native_price_usd = $3, cost_usd = $4
        WHERE chain_id = $1 AND hash = $2 AND cost_usd IS NULL`,
      [t.chain_id, t.hash, usdPerToken(price), costUsd],
    );
    if (updated.rowCount === 1)
      m.gasSpentUsd.inc({ chain: String(t.chain_id), kind: t.kind ?? "unknown" }, Number(costUsd));
  }
  const events = await pool.query<UnpricedEvent>(
    `SELECT chain_id, tx_hash, log_index, block_number, extract(epoch FROM block_time)::bigint AS time,
            asset_id, asset_decimals, amount, relayer_fee
       FROM ledger_events WHERE amount_usd IS NULL ORDER BY block_time LIMIT ${BATCH}`,
  );
  for (const e of events.rows) {
    const point = { chainId: e.chain_id, blockNumber: Number(e.block_number), time: Number(e.time) };
    const price = await pricer.asset(point, e.asset_id);
    if (price === undefined) continue;
    await pool.query(
      `UPDATE ledger_events SET asset_price_usd = $4, amount_usd = $5, relayer_fee_usd = $6
        WHERE chain_id = $1 AND tx_hash = $2 AND log_index = $3 AND amount_usd IS NULL`,
      [
        e.chain_id,
        e.tx_hash,
        e.log_index,
        usdPerToken(price),
        usdOf(BigInt(e.amount), e.asset_decimals, price),
        e.relayer_fee === null ? null : usdOf(BigInt(e.relayer_fee), e.asset_decimals, price),
      ],
    );
  }
  const left = await pool.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM ledger_transactions WHERE cost_usd IS NULL)
          + (SELECT count(*) FROM ledger_events WHERE amount_usd IS NULL) AS n`,
  );
  const unpriced = Number(left.rows[0]?.n ?? 0);
  m.ledgerUnpriced.set(unpriced);
  return unpriced;
}

/** Runs repriceOnce every `intervalMs` (first pass after one interval); a failed pass is logged and the next runs. */
export function startRepricer(params: {
  readonly pool: LedgerPool;
  readonly pricer: LedgerPricer;
  readonly intervalMs: number;
  readonly logger: Logger;
}): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return; // a slow pass is not stacked on
    running = repriceOnce(params.pool, params.pricer)
      .then((unpriced) => {
        params.logger.debug("ledger: repricing pass done", { at: "ledger.reprice", unpriced });
      })
      .catch((err: unknown) => {
        params.logger.warn("ledger: repricing pass failed; the next one retries", {
          at: "ledger.reprice",
          error: errorMessage(err),
        });
      })
      .finally(() => {
        running = undefined;
      });
  }, params.intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}

import type { ReconcileEvent, ReconcileSubject } from "../protocol/reconcile";
import type { LedgerPool } from "./database";

/**
 * Reads of reconciliation (docs/accounting.md#reconciliation): the booked rows of a block range, the cursor of a
 * chain, and the latest results. Reads only: the admin calls readLatestReconciliation on its read-only pool.
 */

/** The booked events and the signer's gas of one chain over (fromBlock, toBlock]. */
export async function readRangeRows(
  pool: LedgerPool,
  params: { chainId: number; fromBlock: number; toBlock: number; signer: string },
): Promise<{ events: ReconcileEvent[]; gasCosts: string[]; sentValues: Array<string | null> }> {
  const range = [params.chainId, params.fromBlock, params.toBlock];
  const [events, gas] = await Promise.all([
    pool.query<ReconcileEvent>(
      `SELECT e.event, e.side, e.asset_id AS "assetId", e.amount, e.relayer_fee AS "relayerFee", e.caller,
              e.recipient, (t.hash IS NOT NULL AND t.from_address = $4) AS "paidBySigner",
              (t.value_wei IS NOT NULL) AS "valueBooked"
         FROM ledger_events e
         LEFT JOIN ledger_transactions t ON t.chain_id = e.chain_id AND t.hash = e.tx_hash
        WHERE e.chain_id = $1 AND e.block_number > $2 AND e.block_number <= $3`,
      [...range, params.signer.toLowerCase()],
    ),
    pool.query<{ costWei: string; valueWei: string | null }>(
      `SELECT cost_wei AS "costWei", value_wei AS "valueWei" FROM ledger_transactions
        WHERE chain_id = $1 AND block_number > $2 AND block_number <= $3 AND from_address = $4`,
      [...range, params.signer.toLowerCase()],
    ),
  ]);
  return {
    events: events.rows,
    gasCosts: gas.rows.map((r) => r.costWei),
    sentValues: gas.rows.map((r) => r.valueWei),
  };
}

/** Every asset the books hold an event of on the chain (lower case). */
export async function readBookedAssets(pool: LedgerPool, chainId: number): Promise<string[]> {
  const rows = await pool.query<{ asset: string }>(
    "SELECT DISTINCT asset_id AS asset FROM ledger_events WHERE chain_id = $1",
    [chainId],
  );
  return rows.rows.map((r) => r.asset);
}

export interface ReconcileCursor {
  readonly chainId: number;
  readonly blockNumber: number;
  readonly routerBalances: Readonly<Record<string, string>>;
  readonly signerBalance: string;
}

export async function readReconcileCursor(pool: LedgerPool, chainId: number): Promise<ReconcileCursor | undefined> {
  const rows = await pool.query<{ block_number: string; router_balances: Record<string, string>; signer: string }>(
    `SELECT block_number, router_balances, signer_balance AS signer FROM ledger_reconcile_cursors WHERE chain_id = $1`,
    [chainId],
  );
  const row = rows.rows[0];
  if (row === undefined) return undefined;
  return {
    chainId,
    blockNumber: Number(row.block_number),
    routerBalances: row.router_balances,
    signerBalance: row.signer,
  };
}

/** One line of a stored result, wei as decimal strings (JSON-safe). */
export interface ReconciliationRow {
  readonly chainId: number;
  readonly fromBlock: number;
  readonly toBlock: number;
  readonly subject: ReconcileSubject;
  readonly assetId: string;
  readonly expected: string;
  readonly actual: string;
  readonly drift: string;
  readonly gasWei: string | null;
  readonly flagged: boolean;
  readonly checkedAt: string;
}

/** The lines of each chain's latest reconciliation run (all rows of a run share its checked_at). */
export async function readLatestReconciliation(pool: LedgerPool): Promise<ReconciliationRow[]> {
  const rows = await pool.query<ReconciliationRow>(
    `SELECT chain_id AS "chainId", from_block::int AS "fromBlock", to_block::int AS "toBlock", subject,
            asset_id AS "assetId", expected, actual, drift, gas_wei AS "gasWei", flagged,
            to_char(checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "checkedAt"
       FROM ledger_reconciliations r
      WHERE checked_at = (SELECT max(checked_at) FROM ledger_reconciliations l WHERE l.chain_id = r.chain_id)
      ORDER BY chain_id, subject, asset_id`,
  );
  return rows.rows;
}

import type { SwapEventRow, SwapTransactionRow } from "../protocol/ledger";
import type { LedgerPool } from "./database";

/**
 * The booked rows of one swap, in the shapes shared/protocol/ledger.ts computes the swap view from. Reads only:
 * the admin API calls it on a read-only pool, the ledger process after it booked a claim.
 */
export async function readSwapRows(
  pool: LedgerPool,
  transactionId: string,
): Promise<{ events: SwapEventRow[]; transactions: SwapTransactionRow[] }> {
  const id = transactionId.toLowerCase();
  const [events, transactions] = await Promise.all([
    pool.query<SwapEventRow>(
      `SELECT chain_id AS "chainId", event, side, user_address AS "user",
              sending_chain_id AS "sendingChainId", sending_asset_id AS "sendingAssetId",
              receiving_chain_id AS "receivingChainId", receiving_asset_id AS "receivingAssetId",
              amount, asset_decimals AS "assetDecimals", relayer_fee AS "relayerFee", caller,
              asset_price_usd AS "assetPriceUsd", relayer_fee_usd AS "relayerFeeUsd"
         FROM ledger_events
        WHERE transaction_id = $1 AND side IS NOT NULL
        ORDER BY block_time, chain_id, block_number, log_index`,
      [id],
    ),
    pool.query<SwapTransactionRow>(
      `SELECT chain_id AS "chainId", kind, hash, gas_used AS "gasUsed",
              effective_gas_price AS "effectiveGasPrice", l1_fee_wei AS "l1FeeWei", cost_wei AS "costWei",
              reverted, cost_usd AS "costUsd"
         FROM ledger_transactions
        WHERE transaction_id = $1
        ORDER BY block_time, chain_id, block_number`,
      [id],
    ),
  ]);
  return { events: events.rows, transactions: transactions.rows };
}

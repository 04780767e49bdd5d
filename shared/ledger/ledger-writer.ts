import type { LedgerPool } from "./database";

/** A ledger_transactions row: a transaction the router's signer paid for. Wei as bigint. */
export interface TransactionRow {
  readonly chainId: number;
  readonly hash: string;
  readonly kind: string | null;
  readonly from: string;
  readonly to: string | null;
  readonly blockNumber: number;
  readonly blockHash: string;
  readonly blockTime: number;
  readonly gasUsed: bigint;
  readonly effectiveGasPrice: bigint;
  readonly l1FeeWei: bigint;
  readonly costWei: bigint;
  /** The transaction's value (native sent besides gas). */
  readonly valueWei: bigint;
  readonly reverted: boolean;
  readonly transactionId: string | null;
  readonly requestId: string | null;
  readonly source: string;
  readonly nativePriceUsd: string | null;
  readonly costUsd: string | null;
}

/** A ledger_events row: one TransactionManager event of this router. */
export interface EventRow {
  readonly chainId: number;
  readonly txHash: string;
  readonly logIndex: number;
  readonly blockNumber: number;
  readonly blockTime: number;
  readonly event: "prepared" | "fulfilled" | "cancelled" | "liquidityAdded" | "liquidityRemoved";
  readonly side: "sending" | "receiving" | null;
  readonly router: string;
  readonly assetId: string;
  readonly assetDecimals: number;
  readonly amount: string;
  readonly relayerFee: string | null;
  readonly caller: string | null;
  readonly transactionId: string | null;
  readonly user: string | null;
  readonly sendingChainId: number | null;
  readonly sendingAssetId: string | null;
  readonly receivingChainId: number | null;
  readonly receivingAssetId: string | null;
  readonly receivingAddress: string | null;
  /** LiquidityRemoved's recipient (absent: NULL). */
  readonly recipient?: string | null;
  readonly expiry: number | null;
  readonly preparedBlockNumber: number | null;
  readonly assetPriceUsd: string | null;
  readonly amountUsd: string | null;
  readonly relayerFeeUsd: string | null;
}

export interface BookResult {
  /** The transaction row was inserted by this call (false: booked before, or not the router's to pay). */
  readonly transactionInserted: boolean;
  /** The event rows this call inserted (the others were booked before). */
  readonly insertedEvents: readonly EventRow[];
}

const TX_COLUMNS = [
  "chain_id",
  "hash",
  "kind",
  "from_address",
  "to_address",
  "block_number",
  "block_hash",
  "block_time",
  "gas_used",
  "effective_gas_price",
  "l1_fee_wei",
  "cost_wei",
  "reverted",
  "transaction_id",
  "request_id",
  "source",
  "native_price_usd",
  "cost_usd",
  "value_wei",
];

const EVENT_COLUMNS = [
  "chain_id",
  "tx_hash",
  "log_index",
  "block_number",
  "block_time",
  "event",
  "side",
  "router",
  "asset_id",
  "asset_decimals",
  "amount",
  "relayer_fee",
  "caller",
  "transaction_id",
  "user_address",
  "sending_chain_id",
  "sending_asset_id",
  "receiving_chain_id",
  "receiving_asset_id",
  "receiving_address",
  "recipient",
  "expiry",
  "prepared_block_number",
  "asset_price_usd",
  "amount_usd",
  "relayer_fee_usd",
];

function insertSql(table: string, columns: readonly string[], key: string, returning: string): string {
  const placeholders = columns.map((column, i) =>
    column.endsWith("block_time") ? `to_timestamp($${i + 1})` : `$${i + 1}`,
  );
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${placeholders.join(", ")})
          ON CONFLICT (${key}) DO NOTHING RETURNING ${returning}`;
}

const INSERT_TX = insertSql("ledger_transactions", TX_COLUMNS, "chain_id, hash", "hash");
const INSERT_EVENT = insertSql("ledger_events", EVENT_COLUMNS, "chain_id, tx_hash, log_index", "log_index");

/**
 * Writes one transaction's rows in one database transaction, each `ON CONFLICT DO NOTHING`: a row already
 * booked (a repeated job, a second producer, a restart mid-way) stays as first booked and is not counted again.
 */
export async function bookRows(
  pool: LedgerPool,
  rows: { readonly transaction?: TransactionRow; readonly events: readonly EventRow[] },
): Promise<BookResult> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    let transactionInserted = false;
    if (rows.transaction) {
      const t = rows.transaction;
      const result = await client.query(INSERT_TX, [
        t.chainId,
        t.hash,
        t.kind,
        t.from,
        t.to,
        t.blockNumber,
        t.blockHash,
        t.blockTime,
        t.gasUsed.toString(),
        t.effectiveGasPrice.toString(),
        t.l1FeeWei.toString(),
        t.costWei.toString(),
        t.reverted,
        t.transactionId,
        t.requestId,
        t.source,
        t.nativePriceUsd,
        t.costUsd,
        t.valueWei.toString(),
      ]);
      transactionInserted = result.rowCount === 1;
    }
    const insertedEvents: EventRow[] = [];
    for (const e of rows.events) {
      const result = await client.query(INSERT_EVENT, [
        e.chainId,
        e.txHash,
        e.logIndex,
        e.blockNumber,
        e.blockTime,
        e.event,
        e.side,
        e.router,
        e.assetId,
        e.assetDecimals,
        e.amount,
        e.relayerFee,
        e.caller,
        e.transactionId,
        e.user,
        e.sendingChainId,
        e.sendingAssetId,
        e.receivingChainId,
        e.receivingAssetId,
        e.receivingAddress,
        e.recipient ?? null,
        e.expiry,
        e.preparedBlockNumber,
        e.assetPriceUsd,
        e.amountUsd,
        e.relayerFeeUsd,
      ]);
      if (result.rowCount === 1) insertedEvents.push(e);
    }
    await client.query("COMMIT");
    return { transactionInserted, insertedEvents };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

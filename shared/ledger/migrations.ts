import type { Pool } from "pg";
import type { Logger } from "../logging/create-logger";

/**
 * The ledger's schema, as versioned migrations (docs/accounting.md "Schema"). Each is applied once, in its own
 * transaction, recorded in `schema_migrations`; a migration once shipped is never edited, only followed by a
 * new one. Amounts are NUMERIC(78,0): a uint256 has 78 decimal digits, and no float ever holds money.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

const WEI = "NUMERIC(78,0)";
const HASH = "TEXT NOT NULL CHECK (%s ~ '^0x[0-9a-f]{64}$')";
const hash = (column: string): string => `${column} ${HASH.replace("%s", column)}`;

export const LEDGER_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "transactions, events and their USD prices",
    sql: `
CREATE TABLE ledger_transactions (
  chain_id            INTEGER NOT NULL,
  ${hash("hash")},
  kind                TEXT,
  from_address        TEXT NOT NULL,
  to_address          TEXT,
  block_number        BIGINT NOT NULL,
  block_hash          TEXT NOT NULL,
  block_time          TIMESTAMPTZ NOT NULL,
  gas_used            ${WEI} NOT NULL CHECK (gas_used >= 0),
  effective_gas_price ${WEI} NOT NULL CHECK (effective_gas_price >= 0),
  l1_fee_wei          ${WEI} NOT NULL DEFAULT 0 CHECK (l1_fee_wei >= 0),
  cost_wei            ${WEI} NOT NULL,
  reverted            BOOLEAN NOT NULL,
  transaction_id      TEXT,
  request_id          TEXT,
  source              TEXT NOT NULL,
  -- USD per whole native token at block_time (chain 1's oracle or the chain's own), and the cost in USD:
  -- NULL until priced, never 0 for "unknown".
  native_price_usd    NUMERIC,
  cost_usd            NUMERIC,
  booked_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (chain_id, hash),
  CHECK (cost_wei = gas_used * effective_gas_price + l1_fee_wei)
);
CREATE INDEX ledger_transactions_transaction_id ON ledger_transactions (transaction_id) WHERE transaction_id IS NOT NULL;
CREATE INDEX ledger_transactions_block_time ON ledger_transactions (block_time);
CREATE INDEX ledger_transactions_unpriced ON ledger_transactions (chain_id) WHERE cost_usd IS NULL;

CREATE TABLE ledger_events (
  chain_id            INTEGER NOT NULL,
  ${hash("tx_hash")},
  log_index           INTEGER NOT NULL,
  block_number        BIGINT NOT NULL,
  block_time          TIMESTAMPTZ NOT NULL,
  event               TEXT NOT NULL CHECK (event IN ('prepared', 'fulfilled', 'cancelled', 'liquidityAdded', 'liquidityRemoved')),
  -- For transfer events: which side of the swap this chain is ('sending' or 'receiving'); NULL for liquidity.
  side                TEXT CHECK (side IN ('sending', 'receiving')),
  router              TEXT NOT NULL,
  -- The asset on this chain (the transfer's sending or receiving asset, or the liquidity's) and its decimals.
  asset_id            TEXT NOT NULL,
  asset_decimals      INTEGER NOT NULL CHECK (asset_decimals BETWEEN 0 AND 77),
  -- The variant amount of a transfer event; the amount of a liquidity event. Base units of asset_id.
  amount              ${WEI} NOT NULL CHECK (amount >= 0),
  relayer_fee         ${WEI} CHECK (relayer_fee >= 0),
  caller              TEXT,
  transaction_id      TEXT,
  user_address        TEXT,
  sending_chain_id    INTEGER,
  sending_asset_id    TEXT,
  receiving_chain_id  INTEGER,
  receiving_asset_id  TEXT,
  receiving_address   TEXT,
  expiry              BIGINT,
  prepared_block_number BIGINT,
  -- USD per whole token of asset_id at block_time; amount and relayer fee in USD. NULL until priced.
  asset_price_usd     NUMERIC,
  amount_usd          NUMERIC,
  relayer_fee_usd     NUMERIC,
  booked_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (chain_id, tx_hash, log_index),
  CHECK ((event IN ('liquidityAdded', 'liquidityRemoved')) = (side IS NULL)),
  CHECK ((side IS NULL) OR (transaction_id IS NOT NULL AND sending_chain_id IS NOT NULL AND receiving_chain_id IS NOT NULL))
);
CREATE INDEX ledger_events_transaction_id ON ledger_events (transaction_id) WHERE transaction_id IS NOT NULL;
CREATE INDEX ledger_events_block_time ON ledger_events (block_time);
CREATE INDEX ledger_events_unpriced ON ledger_events (chain_id) WHERE amount_usd IS NULL;
`,
  },
  {
    version: 2,
    name: "reconciliation: liquidity counterparties, cursors and results",
    sql: `
-- LiquidityRemoved's recipient (LiquidityAdded's caller goes in caller): whose native balance the event moved.
ALTER TABLE ledger_events ADD COLUMN recipient TEXT;

-- Where each chain's reconciliation stands: the chain's state after block_number, the start of the next range.
CREATE TABLE ledger_reconcile_cursors (
  chain_id        INTEGER PRIMARY KEY,
  block_number    BIGINT NOT NULL,
  -- asset (lower case) -> routerBalances(router, asset) at block_number, decimal strings.
  router_balances JSONB NOT NULL,
  signer_balance  ${WEI} NOT NULL,
  updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per (run, chain, subject, asset): the change the books explain, the chain's, and the difference.
CREATE TABLE ledger_reconciliations (
  id          BIGSERIAL PRIMARY KEY,
  chain_id    INTEGER NOT NULL,
  -- The range (from_block, to_block]: the state after from_block against the state after to_block.
  from_block  BIGINT NOT NULL,
  to_block    BIGINT NOT NULL CHECK (to_block >= from_block),
  subject     TEXT NOT NULL CHECK (subject IN ('router-balance', 'signer-native')),
  asset_id    TEXT NOT NULL,
  expected    NUMERIC(78,0) NOT NULL,
  actual      NUMERIC(78,0) NOT NULL,
  drift       NUMERIC(78,0) NOT NULL CHECK (drift = actual - expected),
  -- The signer's booked gas in the range (signer-native rows only), for the reader.
  gas_wei     ${WEI},
  flagged     BOOLEAN NOT NULL,
  checked_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX ledger_reconciliations_latest ON ledger_reconciliations (chain_id, checked_at DESC);
`,
  },
  {
    version: 3,
    name: "the native value each signer transaction sent",
    sql: `
-- The transaction's value (msg.value): native that left the signer besides gas, whoever the call credited (a
-- native addLiquidityFor for another router emits no event of ours). NULL on rows booked before this column.
ALTER TABLE ledger_transactions ADD COLUMN value_wei ${WEI} CHECK (value_wei >= 0);
`,
  },
];

/** One key for the whole ledger database: two ledger processes never migrate at once (pg_advisory_lock). */
export const MIGRATION_LOCK_KEY = 7_301_924_415;

export interface MigrationResult {
  /** Versions applied by this call, in order. */
  readonly applied: readonly number[];
  /** The schema's version afterwards. */
  readonly version: number;
}

/**
 * Brings the database to the newest schema: under a session advisory lock (a second ledger instance waits,
 * then finds nothing left to do), each missing migration in its own transaction with its row in
 * schema_migrations. A migration that fails rolls back whole and the error is thrown: the ledger does not start.
 */
export async function migrateLedger(
  pool: Pool,
  logger: Logger,
  migrations: readonly Migration[] = LEDGER_MIGRATIONS,
): Promise<MigrationResult> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    try {
      await client.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           version    INTEGER PRIMARY KEY,
           name       TEXT NOT NULL,
           applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )`,
      );
      const done = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
      const have = new Set(done.rows.map((r) => r.version));
      const applied: number[] = [];
      for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
        if (have.has(migration.version)) continue;
        await client.query("BEGIN");
        try {
          await client.query(migration.sql);
          await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
            migration.version,
            migration.name,
          ]);
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK");
          throw err;
        }
        applied.push(migration.version);
        logger.info("ledger: schema migration applied", {
          at: "ledger.migrate",
          version: migration.version,
          name: migration.name,
        });
      }
      const version = Math.max(0, ...have, ...applied);
      return { applied, version };
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}

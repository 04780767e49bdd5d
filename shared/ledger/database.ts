import { Pool, types } from "pg";
import type { LedgerConfig } from "../config/types";
import type { Logger } from "../logging/create-logger";
import { throttledErrorLog } from "../logging/throttled-error-log";

/** NUMERIC (OID 1700) and BIGINT (20) come back as strings: wei must never pass through a float. */
types.setTypeParser(1700, (value) => value);
types.setTypeParser(20, (value) => value);

export type LedgerPool = Pool;

export interface LedgerPoolParams {
  readonly ledger: LedgerConfig;
  readonly logger: Logger;
  /** `admin` reads only: every session is read-only, so the admin can never write the books. */
  readonly mode: "writer" | "reader";
  readonly service: string;
  /** A schema to work in instead of public (the rebuild's fresh one); a plain lower-case identifier. */
  readonly schema?: string;
}

const CONNECT_TIMEOUT_MS = 5_000;
const READER_POOL_SIZE = 2;
/** A query the books never need this long for is a stuck database; the caller's job retries. */
const STATEMENT_TIMEOUT_MS = 30_000;

/** The one way a process connects to the ledger database. Errors of idle clients are logged (throttled), never thrown. */
export function createLedgerPool(params: LedgerPoolParams): LedgerPool {
  const reader = params.mode === "reader";
  if (params.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(params.schema)) {
    throw new RangeError(`not a plain schema name: ${params.schema}`);
  }
  const options = [
    ...(reader ? ["-c default_transaction_read_only=on"] : []),
    ...(params.schema === undefined ? [] : [`-c search_path=${params.schema}`]),
  ];
  const pool = new Pool({
    connectionString: params.ledger.databaseUrl,
    max: reader ? READER_POOL_SIZE : params.ledger.poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    application_name: `router-${params.service}`,
    options: options.length > 0 ? options.join(" ") : undefined,
  });
  pool.on("error", throttledErrorLog(params.logger, "ledger database error", { at: `${params.service}.ledger-db` }));
  return pool;
}

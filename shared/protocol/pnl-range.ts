import { ProtocolInputError } from "./errors";

/**
 * The period of a profit-and-loss read (GET /pnl, docs/accounting.md "Profit and loss"): unix seconds, half-open
 * `[from, to)` so that consecutive periods never count a row twice, and optionally cut into buckets of `step`
 * seconds for a chart. Pure: the admin route parses the query with it, the SQL buckets rows with the same rule.
 */
export interface PnlRange {
  readonly from: number;
  readonly to: number;
  /** Bucket width in seconds, when a series is asked for. */
  readonly step?: number;
}

/** A bucket narrower than an hour is noise for a ledger read at block times; 1000 points is a chart, not a dump. */
export const PNL_MIN_STEP_SEC = 3_600;
export const PNL_MAX_BUCKETS = 1_000;
/** 9999-12-31T23:59:59Z: beyond it PostgreSQL's timestamps and a reader's patience end. */
export const PNL_MAX_TIME_SEC = 253_402_300_799;

/** A query parameter as Express hands it: a string, an array when repeated, or absent. */
type QueryValue = unknown;

function unixSeconds(value: QueryValue, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "string" || !/^\d{1,12}$/.test(value)) {
    throw new ProtocolInputError(`${field} must be unix seconds (a non-negative integer)`, { field });
  }
  const seconds = Number(value);
  if (seconds > PNL_MAX_TIME_SEC) {
    throw new ProtocolInputError(`${field} must be at most ${PNL_MAX_TIME_SEC}`, { field });
  }
  return seconds;
}

/**
 * `from` (default 0), `to` (default `nowSec`) and `step` from a query. Refused, naming the field: a value that
 * is not a whole number of seconds, `from > to`, a step under an hour, or more than 1000 buckets.
 */
export function parsePnlRange(
  query: { readonly from?: QueryValue; readonly to?: QueryValue; readonly step?: QueryValue },
  nowSec: number,
): PnlRange {
  const from = unixSeconds(query.from, "from", 0);
  const to = unixSeconds(query.to, "to", Math.floor(nowSec));
  if (from > to) throw new ProtocolInputError("from must not be after to", { field: "from" });
  if (query.step === undefined) return { from, to };
  const step = unixSeconds(query.step, "step", 0);
  if (step < PNL_MIN_STEP_SEC) {
    throw new ProtocolInputError(`step must be at least ${PNL_MIN_STEP_SEC} seconds`, { field: "step" });
  }
  const buckets = bucketCount({ from, to, step });
  if (buckets > PNL_MAX_BUCKETS) {
    throw new ProtocolInputError(
      `step cuts the range into ${buckets} buckets, more than ${PNL_MAX_BUCKETS}: widen step or narrow from/to`,
      { field: "step" },
    );
  }
  return { from, to, step };
}

/** How many buckets of `step` cover `[from, to)`: the last one may be shorter; an empty range has none. */
export function bucketCount(range: { readonly from: number; readonly to: number; readonly step: number }): number {
  return Math.ceil((range.to - range.from) / range.step);
}

/** The start (unix seconds) of each bucket, oldest first. */
export function bucketStarts(range: { readonly from: number; readonly to: number; readonly step: number }): number[] {
  return Array.from({ length: bucketCount(range) }, (_, i) => range.from + i * range.step);
}

/** The bucket a time falls in (the SQL's `floor((t - from) / step)`); undefined outside `[from, to)`. */
export function bucketIndexOf(
  range: { readonly from: number; readonly to: number; readonly step: number },
  timeSec: number,
): number | undefined {
  if (timeSec < range.from || timeSec >= range.to) return undefined;
  return Math.floor((timeSec - range.from) / range.step);
}

// ---- GET /ledger pages -----------------------------------------------------------------------------------

export const LEDGER_PAGE_DEFAULT_LIMIT = 20;
export const LEDGER_PAGE_MAX_LIMIT = 100;

/** Where a page of swaps starts: strictly before this activity time, and before this id among swaps of that second. */
export interface LedgerCursor {
  readonly time: number;
  /** Absent for a plain block time: every swap of that second is after the cursor. */
  readonly transactionId?: string;
}

const CURSOR = /^(\d{1,12})_(0x[0-9a-f]{64})$/;

/** The opaque `next` of a page: the last swap's activity time and id. Clients pass it back as `before`. */
export function encodeLedgerCursor(cursor: { readonly time: number; readonly transactionId: string }): string {
  return `${cursor.time}_${cursor.transactionId.toLowerCase()}`;
}

/** `limit` (1..100, default 20) and `before` (unix seconds, or a `next` cursor) of GET /ledger. */
export function parseLedgerPage(query: { readonly limit?: QueryValue; readonly before?: QueryValue }): {
  readonly limit: number;
  readonly before?: LedgerCursor;
} {
  let limit = LEDGER_PAGE_DEFAULT_LIMIT;
  if (query.limit !== undefined) {
    if (typeof query.limit !== "string" || !/^\d{1,3}$/.test(query.limit)) {
      throw new ProtocolInputError(`limit must be an integer from 1 to ${LEDGER_PAGE_MAX_LIMIT}`, { field: "limit" });
    }
    limit = Number(query.limit);
    if (limit < 1 || limit > LEDGER_PAGE_MAX_LIMIT) {
      throw new ProtocolInputError(`limit must be an integer from 1 to ${LEDGER_PAGE_MAX_LIMIT}`, { field: "limit" });
    }
  }
  if (query.before === undefined) return { limit };
  const before = query.before;
  if (typeof before === "string") {
    const cursor = CURSOR.exec(before);
    if (cursor) return { limit, before: { time: Number(cursor[1]), transactionId: cursor[2] } };
    if (/^\d{1,12}$/.test(before)) return { limit, before: { time: Number(before) } };
  }
  throw new ProtocolInputError("before must be unix seconds or the `next` of a previous page", { field: "before" });
}

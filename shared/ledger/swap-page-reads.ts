import type { LedgerCursor } from "../protocol/pnl-range";
import type { LedgerPool } from "./database";

/** A swap of a page: its id and the time of its latest booked event (what "most recent" orders by). */
export interface SwapPageEntry {
  readonly transactionId: string;
  readonly lastTime: number;
}

/**
 * The ids of the `limit` swaps with the most recent activity (latest booked transfer event) strictly before
 * `before`, newest first, ties by id descending; one more is read so the caller knows whether a next page exists.
 */
export async function readSwapPage(
  pool: LedgerPool,
  page: { readonly limit: number; readonly before?: LedgerCursor },
): Promise<{ entries: SwapPageEntry[]; more: boolean }> {
  const before = page.before;
  const { rows } = await pool.query<{ transaction_id: string; last_time: string }>(
    `SELECT transaction_id, extract(epoch FROM max(block_time))::bigint AS last_time
       FROM ledger_events
      WHERE side IS NOT NULL
      GROUP BY transaction_id
     HAVING $1::bigint IS NULL
         OR extract(epoch FROM max(block_time))::bigint < $1::bigint
         OR (extract(epoch FROM max(block_time))::bigint = $1::bigint
             AND transaction_id COLLATE "C" < $2::text COLLATE "C")
      ORDER BY max(block_time) DESC, transaction_id COLLATE "C" DESC
      LIMIT $3`,
    [before?.time ?? null, before?.transactionId ?? null, page.limit + 1],
  );
  return {
    entries: rows.slice(0, page.limit).map((r) => ({ transactionId: r.transaction_id, lastTime: Number(r.last_time) })),
    more: rows.length > page.limit,
  };
}

import { swapViewOf, type SwapView } from "../protocol/ledger";
import { encodeLedgerCursor, type LedgerCursor, type PnlRange } from "../protocol/pnl-range";
import type { LedgerPool } from "./database";
import { readPnl, type PnlReport } from "./pnl-reads";
import { readSwapPage } from "./swap-page-reads";
import { readSwapRows } from "./swap-reads";

/** What the admin reads from the books beyond one swap: profit and loss over a period, and the latest swaps. */
export interface LedgerReports {
  pnl(range: PnlRange): Promise<PnlReport>;
  /** Newest first; `next` is the cursor of the following page, null on the last. */
  latest(page: {
    readonly limit: number;
    readonly before?: LedgerCursor;
  }): Promise<{ swaps: SwapView[]; next: string | null }>;
}

/** The reports over a (read-only) pool; `signer` is the router's signer, whose relayer fees are the router's. */
export function createLedgerReports(pool: LedgerPool, signer: string): LedgerReports {
  return {
    pnl: (range) => readPnl(pool, range, signer),
    latest: async (page) => {
      const { entries, more } = await readSwapPage(pool, page);
      const swaps = await Promise.all(
        entries.map(async ({ transactionId }) =>
          swapViewOf({ transactionId, signer, ...(await readSwapRows(pool, transactionId)) }),
        ),
      );
      const last = entries[entries.length - 1];
      return {
        // A swap listed has events, so its view exists; the filter only satisfies the type.
        swaps: swaps.filter((s): s is SwapView => s !== undefined),
        next: more && last ? encodeLedgerCursor({ time: last.lastTime, transactionId: last.transactionId }) : null,
      };
    },
  };
}

import type express from "express";
import type { RequestHandler } from "express";
import type { SwapView } from "../../../shared/protocol/ledger";
import { AdminApiError } from "../errors";
import { methodNotAllowed } from "../middleware/error-handler";

/** Reads one swap's view from the books; undefined when no event of it is booked. */
export type LedgerSwapReader = (transactionId: string) => Promise<SwapView | undefined>;

const TRANSACTION_ID = /^0x[0-9a-fA-F]{64}$/;

/**
 * `GET /ledger/<transactionId>` (docs/admin-api.md): the swap as the books hold it. Without a `ledger` section
 * the route still answers, with `ledger_off`, so a script can tell "books off" from "unknown swap".
 */
export function ledgerRoutes(
  app: express.Express,
  deps: { readonly adminPage: RequestHandler; readonly readSwap?: LedgerSwapReader },
): void {
  app.get("/ledger/:transactionId", deps.adminPage, async (req, res) => {
    const readSwap = deps.readSwap;
    if (readSwap === undefined) {
      throw new AdminApiError(
        "LEDGER_OFF",
        "the books are off: the config has no `ledger` section (docs/config.md#ledger)",
      );
    }
    const transactionId = String(req.params.transactionId);
    if (!TRANSACTION_ID.test(transactionId)) {
      throw new AdminApiError("BAD_REQUEST", "transactionId must be 0x and 64 hex digits");
    }
    let view: SwapView | undefined;
    try {
      view = await readSwap(transactionId.toLowerCase());
    } catch (err) {
      throw new AdminApiError("LEDGER_UNAVAILABLE", "the ledger database could not be read", { cause: err });
    }
    if (view === undefined) {
      throw new AdminApiError("SWAP_NOT_BOOKED", "no event of this transactionId is booked in the ledger");
    }
    res.json(view);
  });
  app.all("/ledger/:transactionId", methodNotAllowed(["GET", "HEAD"]));
}

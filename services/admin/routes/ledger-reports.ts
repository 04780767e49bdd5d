import type express from "express";
import type { RequestHandler } from "express";
import type { LedgerReports } from "../../../shared/ledger/ledger-reports";
import { ProtocolInputError } from "../../../shared/protocol/errors";
import { parseLedgerPage, parsePnlRange } from "../../../shared/protocol/pnl-range";
import { AdminApiError, type AdminErrorCode } from "../errors";
import { methodNotAllowed } from "../middleware/error-handler";

/**
 * `GET /pnl` and `GET /ledger` (docs/admin-api.md): profit and loss over a period, and the latest swaps, read
 * from the books. Without a `ledger` section both answer `ledger_off`, as GET /ledger/<transactionId> does.
 */
export function ledgerReportRoutes(
  app: express.Express,
  deps: { readonly adminPage: RequestHandler; readonly reports?: LedgerReports },
): void {
  const reportsOf = (): LedgerReports => {
    if (deps.reports === undefined) {
      throw new AdminApiError(
        "LEDGER_OFF",
        "the books are off: the config has no `ledger` section (docs/config.md#ledger)",
      );
    }
    return deps.reports;
  };

  app.get("/pnl", deps.adminPage, async (req, res) => {
    const reports = reportsOf();
    const range = decoded("INVALID_RANGE", () => parsePnlRange(req.query, Date.now() / 1000));
    res.json(await read(() => reports.pnl(range)));
  });
  app.get("/ledger", deps.adminPage, async (req, res) => {
    const reports = reportsOf();
    const page = decoded("INVALID_PAGE", () => parseLedgerPage(req.query));
    res.json(await read(() => reports.latest(page)));
  });
  app.all(["/pnl", "/ledger"], methodNotAllowed(["GET", "HEAD"]));
}

/** A query the pure parser refused becomes a 400 naming the field. */
function decoded<T>(code: AdminErrorCode, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof ProtocolInputError) throw new AdminApiError(code, err.message, { field: err.context.field });
    throw err;
  }
}

async function read<T>(query: () => Promise<T>): Promise<T> {
  try {
    return await query();
  } catch (err) {
    throw new AdminApiError("LEDGER_UNAVAILABLE", "the ledger database could not be read", { cause: err });
  }
}

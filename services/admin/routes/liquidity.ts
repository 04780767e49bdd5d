import type { Express, RequestHandler } from "express";
import type { RouterConfig } from "../../../shared/config/types";
import { AdminApiError, toErrorResponse } from "../errors";
import { methodNotAllowed } from "../middleware/error-handler";
import { bodyOf } from "../middleware/json-body";
import { requestIdOf } from "../middleware/request-context";
import { decodeMigrateLiquidity, decodeTokenOnly } from "../request-schemas";
import type { AdminOperations, MigrateLiquidityEntry } from "../types";

export interface LiquidityRoutesDeps {
  /** The admin POST pipeline of app.ts: body checks, then the token. */
  readonly adminPost: readonly RequestHandler[];
  readonly operations: AdminOperations;
  readonly config: RouterConfig;
  readonly redactText: (text: string) => string;
}

/**
 * POST /migrate-liquidity and POST /process-active-transactions (docs/admin-api.md), each mounted only with its
 * operation. /add-liquidity-for is a transaction route of app.ts like /remove-liquidity.
 */
export function liquidityRoutes(app: Express, deps: LiquidityRoutesDeps): void {
  const { migrateLiquidity, processActiveTransactions, addLiquidityFor } = deps.operations;
  if (migrateLiquidity) {
    app.post("/migrate-liquidity", ...deps.adminPost, async (req, res) => {
      const request = decodeMigrateLiquidity(bodyOf(req));
      if (!Object.prototype.hasOwnProperty.call(deps.config.chainConfig, String(request.chainId))) {
        throw new AdminApiError("UNKNOWN_CHAIN", "chainId: not a chain in this router's chainConfig", {
          field: "chainId",
        });
      }
      const requestId = requestIdOf(res);
      const entries = await migrateLiquidity(request, { requestId });
      res.status(200).json(entries.map((entry) => entryBody(entry, requestId, deps.redactText)));
    });
  }
  if (processActiveTransactions) {
    app.post("/process-active-transactions", ...deps.adminPost, async (req, res) => {
      decodeTokenOnly(bodyOf(req));
      res.status(200).json(await processActiveTransactions({ requestId: requestIdOf(res) }));
    });
  }
  const mounted = [
    addLiquidityFor && "/add-liquidity-for",
    migrateLiquidity && "/migrate-liquidity",
    processActiveTransactions && "/process-active-transactions",
  ].filter((path): path is string => typeof path === "string");
  if (mounted.length > 0) {
    app.all(mounted, methodNotAllowed(["POST"]));
  }
}

/** A moved asset as it is; a failed one with the `error` code and message the one table gives it. */
function entryBody(
  entry: MigrateLiquidityEntry,
  requestId: string,
  redactText: (text: string) => string,
): Record<string, unknown> {
  if (entry.failure === undefined) {
    const { failure: _failure, ...moved } = entry;
    return moved;
  }
  const { body } = toErrorResponse(entry.failure, requestId, redactText);
  const { requestId: _requestId, ...error } = body;
  return { assetId: entry.assetId, ...(entry.amount === undefined ? {} : { amount: entry.amount }), ...error };
}

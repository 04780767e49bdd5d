import type { Queue } from "bullmq";
import express, { type RequestHandler } from "express";
import type { Redis } from "ioredis";
import { configSecrets } from "../../shared/config/redact-config";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { createRedactor } from "../../shared/logging/redact";
import { AdminApiError } from "./errors";
import { createAuthThrottle } from "./middleware/auth-throttle";
import { authenticate } from "./middleware/authenticate";
import { requireAdminToken, sameOriginWrites } from "./middleware/dashboard-auth";
import { errorHandler, methodNotAllowed, notFound } from "./middleware/error-handler";
import { bodyOf, jsonBody } from "./middleware/json-body";
import { requestContext, requestIdOf } from "./middleware/request-context";
import { decodeAddLiquidityFor, decodeCancelSender, decodeRemoveLiquidity } from "./request-schemas";
import { dashboardGuard } from "./routes/dashboard-guard";
import { ledgerRoutes, type LedgerSwapReader } from "./routes/ledger";
import { ledgerReportRoutes } from "./routes/ledger-reports";
import { operatorPage } from "./routes/operator-page";
import type { LedgerReports } from "../../shared/ledger/ledger-reports";
import { liquidityRoutes } from "./routes/liquidity";
import { DASHBOARD_PATH, queueDashboard } from "./routes/queue-dashboard";
import type { RouterStatus } from "./status";
import type { InventoryReader } from "./inventory";
import type { AdminOperations, OperationContext, TransactionResponse } from "./types";

export type { AdminOperations, CancelSenderRequest, RemoveLiquidityRequest } from "./types";

export interface AdminAppDeps {
  readonly config: RouterConfig;
  readonly logger: Logger;
  /** Checksummed address of the router's signer (`GET /config`, docs/admin-api.md), resolved once at start. */
  readonly signerAddress: string;
  readonly operations: AdminOperations;
  /** GET /status (admin token): the whole router's state; the route is absent without it. */
  readonly status?: () => Promise<RouterStatus>;
  /** GET /inventory and GET /rebalance/plan (admin token); absent without it. */
  readonly inventory?: InventoryReader;
  /**
   * The dashboard at /admin/queues (admin token) over these queues; absent without them. Its Redis client
   * reads what a retry must check first (send records, transfers).
   */
  readonly dashboard?: { readonly queues: readonly Queue[]; readonly redis: Redis };
  /** GET /ledger/<transactionId> (admin token); absent: the books are off and the route says so (`ledger_off`). */
  readonly ledger?: LedgerSwapReader;
  /** GET /pnl and GET /ledger (admin token); absent: the books are off (`ledger_off`). */
  readonly ledgerReports?: LedgerReports;
}

/**
 * The admin HTTP API (docs/admin-api.md), without listen(): routes only decode,
 * validate and authenticate, then call an operation; one error handler maps every failure to a status.
 */
export function createApp(deps: AdminAppDeps): express.Express {
  const { config, logger, operations } = deps;
  const redactor = createRedactor(configSecrets(config));
  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  app.use(requestContext(logger));

  app.get("/ping", (_req, res) => {
    res.type("text/plain").send("pong");
  });
  app.get("/config", (_req, res) => {
    res.json({ signerAddress: deps.signerAddress });
  });

  // Same pipeline for every admin action, applied once: body checks, then the token, then the fields.
  // One throttle for both surfaces: a source guessing the token is slowed down on each (auth-throttle.ts).
  const throttle = createAuthThrottle(logger);
  const adminPost = [...jsonBody(), authenticate({ adminToken: config.adminToken, throttle })];
  app.post(
    "/remove-liquidity",
    ...adminPost,
    transactionRoute({
      decode: decodeRemoveLiquidity,
      chainOf: (request) => ({ field: "chainId", chainId: request.chainId }),
      call: (request, ctx) => operations.removeLiquidity(request, ctx),
      config,
    }),
  );
  app.post(
    "/cancel-sender",
    ...adminPost,
    transactionRoute({
      decode: decodeCancelSender,
      chainOf: (request) => ({ field: "senderChainId", chainId: request.senderChainId }),
      call: (request, ctx) => operations.cancelSender(request, ctx),
      config,
    }),
  );

  const { addLiquidityFor } = operations;
  if (addLiquidityFor) {
    app.post(
      "/add-liquidity-for",
      ...adminPost,
      transactionRoute({
        decode: decodeAddLiquidityFor,
        chainOf: (request) => ({ field: "chainId", chainId: request.chainId }),
        call: (request, ctx) => addLiquidityFor(request, ctx),
        config,
      }),
    );
  }
  liquidityRoutes(app, { adminPost, operations, config, redactText: redactor.text });

  // Pages for people and scripts: HTTP Basic (token as password) or Bearer, not a token in a JSON body.
  const adminPage = requireAdminToken({ adminToken: config.adminToken, throttle });
  if (deps.status) {
    const readStatus = deps.status;
    app.get("/status", adminPage, async (_req, res) => {
      let status: RouterStatus;
      try {
        status = await readStatus();
      } catch (err) {
        throw new AdminApiError("STATUS_UNAVAILABLE", "the router's state could not be read from Redis", {
          cause: err,
        });
      }
      res.json(status);
    });
    app.all("/status", methodNotAllowed(["GET", "HEAD"]));
  }
  ledgerRoutes(app, { adminPage, readSwap: deps.ledger });
  ledgerReportRoutes(app, { adminPage, reports: deps.ledgerReports });
  operatorPage(app, { adminPage });
  if (deps.inventory) {
    const reader = deps.inventory;
    app.get("/inventory", adminPage, async (_req, res) => {
      res.json({ pools: await reader.inventory() });
    });
    app.get("/rebalance/plan", adminPage, async (_req, res) => {
      res.json(await reader.plan());
    });
    app.all(["/inventory", "/rebalance/plan"], methodNotAllowed(["GET", "HEAD"]));
  }
  if (deps.dashboard) {
    const { queues, redis } = deps.dashboard;
    app.use(
      DASHBOARD_PATH,
      adminPage,
      sameOriginWrites,
      dashboardGuard({ actions: config.dashboardActions, queues, redis, redisPrefix: config.redisPrefix }),
      queueDashboard({ queues, actions: config.dashboardActions, environment: config.network }),
    );
  }

  app.all(["/ping", "/config"], methodNotAllowed(["GET", "HEAD"]));
  app.all(["/remove-liquidity", "/cancel-sender"], methodNotAllowed(["POST"]));
  app.use(notFound);
  app.use(errorHandler({ logger, redactText: redactor.text }));
  return app;
}

interface TransactionRouteParams<T> {
  decode(body: Record<string, unknown>): T;
  chainOf(request: T): { field: string; chainId: number };
  call(request: T, ctx: OperationContext): Promise<TransactionResponse>;
  config: RouterConfig;
}

function transactionRoute<T>(params: TransactionRouteParams<T>): RequestHandler {
  return async (req, res) => {
    const request = params.decode(bodyOf(req));
    const { field, chainId } = params.chainOf(request);
    if (!Object.prototype.hasOwnProperty.call(params.config.chainConfig, String(chainId))) {
      throw new AdminApiError("UNKNOWN_CHAIN", `${field}: not a chain in this router's chainConfig`, { field });
    }
    const result = await params.call(request, { requestId: requestIdOf(res) });
    res.status(200).json({ transactionHash: result.transactionHash });
  };
}

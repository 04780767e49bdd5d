import { RouterError } from "../../shared/errors";

/**
 * The one table from error `code` to HTTP status for the admin API (docs/admin-api.md lists the same).
 * API-level conditions (AdminApiError) and the errors operations throw share it, so a status is decided in
 * exactly one place. The response's `error` field is the code in lower case, or `as` where the API groups
 * several codes under one. `expose` names context fields that are safe and useful to return next to the message.
 */
export const HTTP_STATUS = {
  BAD_REQUEST: { status: 400 },
  MALFORMED_JSON: { status: 400 },
  INVALID_BODY: { status: 400 },
  INVALID_AMOUNT: { status: 400 },
  UNKNOWN_CHAIN: { status: 400 },
  ASSET_NOT_IN_POOL: { status: 400 },
  // GET /pnl's from/to/step and GET /ledger's limit/before: the field is named.
  INVALID_RANGE: { status: 400, expose: ["field"] },
  INVALID_PAGE: { status: 400, expose: ["field"] },
  UNAUTHORIZED: { status: 401 },
  FORBIDDEN: { status: 403 },
  DASHBOARD_ACTION_REFUSED: { status: 403 },
  NOT_FOUND: { status: 404 },
  TRANSACTION_NOT_FOUND: { status: 404 },
  // GET /ledger/<transactionId>: no event of the swap is booked (yet).
  SWAP_NOT_BOOKED: { status: 404 },
  METHOD_NOT_ALLOWED: { status: 405 },
  INSUFFICIENT_LIQUIDITY: { status: 409 },
  RETRY_REFUSED: { status: 409 },
  REQUEST_ID_CONFLICT: { status: 409, expose: ["jobId"] },
  SENDER_NOT_PREPARED: { status: 409 },
  RECEIVER_LIVE: { status: 409 },
  // The shared sender-cancel refusals (shared/chain/sender-cancel-errors.ts) are finer than the API's codes,
  // which stay as documented: the message says which case it is.
  RECEIVER_NOT_CANCELLED: { status: 409, as: "receiver_live" },
  RECEIVER_BEING_PREPARED: { status: 409, as: "receiver_live" },
  RECEIVER_STATE_UNKNOWN: { status: 409, as: "receiver_unverifiable" },
  RECEIVER_FULFILLED: { status: 409 },
  RECEIVER_PREPARE_DECIDED: { status: 409 },
  // The recorded receiving prepare reverted, not yet `confirmations` deep: the same request passes once it is.
  RECEIVER_PREPARE_REVERT_NOT_FINAL: { status: 409 },
  RECEIVER_UNVERIFIABLE: { status: 409 },
  SENDER_TOO_NEW: { status: 409 },
  // The liquidity routes' refusals, decided before anything is enqueued (docs/admin-api.md).
  INSUFFICIENT_WALLET_BALANCE: { status: 409 },
  ROUTER_NOT_APPROVED: { status: 409 },
  ASSET_NOT_APPROVED: { status: 409 },
  OPEN_TRANSFERS: { status: 409 },
  MIGRATION_NEEDS_DIRECT_MODE: { status: 409 },
  CLEAN_UP_MODE_OFF: { status: 409 },
  NOTHING_TO_MIGRATE: { status: 409 },
  PAYLOAD_TOO_LARGE: { status: 413 },
  UNSUPPORTED_MEDIA_TYPE: { status: 415 },
  TOO_MANY_AUTH_FAILURES: { status: 429 },
  INTERNAL_ERROR: { status: 500 },
  // The config has no `ledger` section: the books are off, not down; retrying will not help.
  LEDGER_OFF: { status: 501 },
  TRANSACTION_FAILED: { status: 502, expose: ["jobId"] },
  QUEUE_UNAVAILABLE: { status: 503 },
  BALANCE_UNAVAILABLE: { status: 503 },
  CHAIN_UNAVAILABLE: { status: 503 },
  STATUS_UNAVAILABLE: { status: 503 },
  LEDGER_UNAVAILABLE: { status: 503 },
  INVENTORY_UNAVAILABLE: { status: 503 },
  REDIS_NOT_REPLICATED: { status: 503 },
  BROADCAST_TIMEOUT: { status: 504, expose: ["jobId"] },
} as const satisfies Record<string, { status: number; expose?: readonly string[]; as?: string }>;

export type AdminErrorCode = keyof typeof HTTP_STATUS;

/** A condition of the HTTP layer itself (auth, body, routing); its status comes from HTTP_STATUS. */
export class AdminApiError extends RouterError {
  readonly code: AdminErrorCode;
  readonly retriable = false;
  readonly status: number;

  constructor(code: AdminErrorCode, message: string, context: Record<string, unknown> = {}) {
    super(message, context);
    this.code = code;
    this.status = HTTP_STATUS[code].status;
  }
}

export interface ErrorResponse {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** Status and body for any thrown value; unknown errors become a bare 500 whose detail stays in the log. */
export function toErrorResponse(err: unknown, requestId: string, redactText: (text: string) => string): ErrorResponse {
  const entry = err instanceof RouterError ? lookup(err.code) : undefined;
  if (!(err instanceof RouterError) || !entry) {
    return {
      status: 500,
      body: { error: "internal_error", message: "internal error", requestId },
    };
  }
  const body: Record<string, unknown> = {
    error: entry.as ?? err.code.toLowerCase(),
    message: redactText(err.message),
    requestId,
  };
  for (const field of entry.expose ?? []) {
    const value = err.context[field];
    if (typeof value === "string") {
      body[field] = redactText(value);
    }
  }
  return { status: entry.status, body };
}

function lookup(code: string): { status: number; expose?: readonly string[]; as?: string } | undefined {
  return Object.prototype.hasOwnProperty.call(HTTP_STATUS, code) ? HTTP_STATUS[code as AdminErrorCode] : undefined;
}

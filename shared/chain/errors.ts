import { isError } from "ethers";
import { RouterError, errorClass } from "../errors";
import { findRevertCode, revertReason } from "./revert-codes";

/**
 * Typed chain errors. Everything that talks to a node turns what it caught into one of these with
 * `toChainError`, so callers branch with `instanceof`; this file is the only place that reads node
 * message text (like viem's getNodeError).
 */

/** The node could not be reached or answered like a broken server: connection refused/reset, timeout, 5xx, 429. */
export class RpcUnavailableError extends errorClass(RouterError, "RPC_UNAVAILABLE", "retriable") {}

/** Every provider that answered is too far behind the best head seen to be trusted for this read. */
export class ProviderLaggingError extends errorClass(RouterError, "PROVIDER_LAGGING", "retriable") {}

/**
 * The call reverts (at estimation, or a mined receipt with status 0). Not retriable: the same call against
 * the same state reverts again. `code` is the decoded NXTP reason (`INSUFFICIENT_LIQUIDITY` for `#RL:008`)
 * when there is one, else TRANSACTION_REVERTED.
 */
export class TransactionRevertedError extends RouterError {
  readonly code: string;
  readonly retriable = false;
  /** NXTP revert code without the `#`, e.g. `RL:008`. */
  readonly revertCode?: string;
  /** Named reason from `REVERT_REASONS`, e.g. `INSUFFICIENT_LIQUIDITY`. */
  readonly reason?: string;

  constructor(
    message: string,
    context: Record<string, unknown> = {},
    options?: { cause?: unknown; revertCode?: string },
  ) {
    const revertCode = options?.revertCode;
    const reason = revertCode ? revertReason(revertCode) : undefined;
    super(message, { ...context, revertCode, reason }, { cause: options?.cause });
    this.revertCode = revertCode;
    this.reason = reason;
    this.code = reason ?? "TRANSACTION_REVERTED";
  }
}

/** The nonce is already used on chain. Retriable: rebuild the transaction with a fresh nonce. */
export class NonceTooLowError extends errorClass(RouterError, "NONCE_TOO_LOW", "retriable") {}

/** A same-nonce replacement was not priced high enough above the transaction it replaces. */
export class ReplacementUnderpricedError extends errorClass(RouterError, "REPLACEMENT_UNDERPRICED", "retriable") {}

/** The signer cannot pay gas × price + value. Retriable once an operator tops up: hold and alert, never bump. */
export class InsufficientFundsError extends errorClass(RouterError, "INSUFFICIENT_FUNDS", "retriable") {}

/** The node already has this exact transaction: the broadcast succeeded earlier. */
export class TransactionAlreadyKnownError extends errorClass(RouterError, "TRANSACTION_ALREADY_KNOWN", "retriable") {}

/** A node error we have no class for. Retriable (unknown errors keep the job alive), but not failed over. */
export class ChainRequestError extends errorClass(RouterError, "CHAIN_REQUEST_FAILED", "retriable") {}

/** No gas price from stations, providers or the configured default. */
export class GasPriceUnavailableError extends errorClass(RouterError, "GAS_PRICE_UNAVAILABLE", "retriable") {}

type ChainErrorFactory = (message: string, cause: unknown) => RouterError;

/**
 * Node messages, across geth, erigon, nethermind, parity and anvil. Order matters: the first match wins.
 * "already imported" is a duplicate-hash answer (parity: "Transaction with the same hash was already
 * imported", anvil: "transaction already imported"), so it means "sent", not "nonce taken": reading it
 * as nonce-too-low would make a first broadcast rebuild with a new nonce while the original sits in the pool.
 */
const NODE_MESSAGES: ReadonlyArray<readonly [RegExp, ChainErrorFactory]> = [
  [
    /already known|already imported|known transaction/i,
    (m, c) => new TransactionAlreadyKnownError(m, {}, { cause: c }),
  ],
  [/nonce too low|nonce is too low|nonce has already been used/i, (m, c) => new NonceTooLowError(m, {}, { cause: c })],
  [
    /replacement transaction underpriced|replacement fee too low/i,
    (m, c) => new ReplacementUnderpricedError(m, {}, { cause: c }),
  ],
  [/insufficient funds/i, (m, c) => new InsufficientFundsError(m, {}, { cause: c })],
  [/execution reverted|always failing transaction|gas required exceeds allowance/i, (m, c) => reverted(m, c)],
  [
    /rate limit|too many requests|header not found|request timed out|service unavailable|bad gateway/i,
    (m, c) => rpcDown(m, c),
  ],
];

/** Socket-level failures node's fetch reports without an ethers code. */
const NETWORK_ERRNOS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/** Maps anything a provider call threw to a RouterError; RouterErrors pass through unchanged. */
export function toChainError(err: unknown): RouterError {
  if (err instanceof RouterError) {
    return err;
  }
  const text = messagesOf(err).join(" | ");
  const short = shortMessage(err, text);
  // ethers turns *every* JSON-RPC error of eth_call/eth_estimateGas into CALL_EXCEPTION, a rate limit
  // included; only revert data or the node saying "revert" makes it a revert (terminal).
  if (
    isError(err, "CALL_EXCEPTION") &&
    (hasRevertData(err.data) || err.reason !== null || /revert/i.test(nodeText(err)))
  ) {
    return reverted(short, err, [err.reason ?? "", text].join(" "));
  }
  for (const [pattern, make] of NODE_MESSAGES) {
    if (pattern.test(text)) {
      return make(short, err);
    }
  }
  if (isError(err, "NONCE_EXPIRED")) {
    return new NonceTooLowError(short, {}, { cause: err });
  }
  if (isError(err, "REPLACEMENT_UNDERPRICED")) {
    return new ReplacementUnderpricedError(short, {}, { cause: err });
  }
  if (isError(err, "INSUFFICIENT_FUNDS")) {
    return new InsufficientFundsError(short, {}, { cause: err });
  }
  if (
    isError(err, "TIMEOUT") ||
    isError(err, "SERVER_ERROR") ||
    isError(err, "NETWORK_ERROR") ||
    hasNetworkErrno(err)
  ) {
    return rpcDown(short, err);
  }
  return new ChainRequestError(short, {}, { cause: err });
}

function reverted(message: string, cause: unknown, text: string = message): TransactionRevertedError {
  const revertCode = findRevertCode(text);
  return new TransactionRevertedError(
    revertCode ? `reverted #${revertCode}: ${message}` : message,
    {},
    { cause, revertCode },
  );
}

function rpcDown(message: string, cause: unknown): RpcUnavailableError {
  return new RpcUnavailableError(message, {}, { cause });
}

function hasRevertData(data: unknown): boolean {
  return typeof data === "string" && /^0x[0-9a-fA-F]{8,}$/.test(data);
}

function hasNetworkErrno(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === "object" && depth < 4; depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_ERRNOS.has(code)) {
      return true;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Every message an ethers error carries: its own, the node's JSON-RPC error inside `info`, and causes. */
function messagesOf(err: unknown, depth = 0): string[] {
  if (err === null || typeof err !== "object" || depth > 3) {
    return typeof err === "string" ? [err] : [];
  }
  const e = err as {
    message?: unknown;
    shortMessage?: unknown;
    info?: { error?: unknown };
    error?: unknown;
    cause?: unknown;
  };
  const own = [e.shortMessage, e.message].filter((m): m is string => typeof m === "string");
  return [
    ...own,
    ...messagesOf(e.info?.error, depth + 1),
    ...messagesOf(e.error, depth + 1),
    ...messagesOf(e.cause, depth + 1),
  ];
}

/** What the node itself said (ethers' own words, e.g. "missing revert data", left out). */
function nodeText(err: { info?: { error?: unknown }; error?: unknown }): string {
  return [...messagesOf(err.info?.error), ...messagesOf(err.error)].join(" | ");
}

/** A bounded message for our error: the node's own words when there are some, else ethers' short message. */
function shortMessage(err: unknown, text: string): string {
  const nodeMessage = (err as { info?: { error?: { message?: unknown } } } | null)?.info?.error?.message;
  const ethersShort = (err as { shortMessage?: unknown } | null)?.shortMessage;
  const picked = typeof nodeMessage === "string" ? nodeMessage : typeof ethersShort === "string" ? ethersShort : text;
  return (picked || "unknown chain error").slice(0, 300);
}

/** The chain's provider list cannot be used at all (no http(s) URL). */
export class ChainProviderConfigError extends errorClass(RouterError, "CHAIN_PROVIDER_CONFIG_INVALID", "terminal") {}

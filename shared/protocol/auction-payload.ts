import { AuctionRefusal, refusal } from "./auction-refusal";
import { AuctionPayload } from "./types";

/**
 * Strict validation of `auction.request` data (docs/protocol.md#auction-request), closing the original's gaps: every
 * field is required with its exact JSON type, hex values must be well-formed, and the amount must be a uint256 in
 * decimal digits. Extra fields are allowed and ignored (as in the original); the returned payload holds only the
 * known fields, with values exactly as received (address case included: the bid copies them).
 */

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const HEX = /^0x([0-9a-fA-F]{2})*$/;
const DECIMAL = /^[0-9]+$/;
const UINT256_LIMIT = 1n << 256n;
/** 2^256 has 78 decimal digits; anything longer is out of range without parsing it. */
const MAX_UINT256_DIGITS = 78;

/**
 * Call data travels encrypted and opaque; the router only copies it into the bid. Bounded so one request
 * cannot make the router hash and sign megabytes (NATS' own default limit is 1 MiB per message).
 */
export const MAX_ENCRYPTED_CALL_DATA_BYTES = 64 * 1024;

const ADDRESS_FIELDS = [
  "user",
  "initiator",
  "sendingAssetId",
  "receivingAssetId",
  "receivingAddress",
  "callTo",
] as const;
const CHAIN_FIELDS = ["sendingChainId", "receivingChainId"] as const;

export type ParsedAuctionPayload =
  | { readonly ok: true; readonly payload: AuctionPayload; readonly amount: bigint }
  | { readonly ok: false; readonly refusal: AuctionRefusal };

export function parseAuctionPayload(data: unknown): ParsedAuctionPayload {
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    return refused("ParamsInvalid", "data must be a JSON object");
  }
  const d = data as Record<string, unknown>;
  for (const field of ADDRESS_FIELDS) {
    if (!isString(d[field]) || !ADDRESS.test(d[field])) {
      return refused("ParamsInvalid", `${field} must be a 20-byte hex address`);
    }
  }
  for (const field of CHAIN_FIELDS) {
    if (!isSafeInteger(d[field]) || d[field] < 1) {
      return refused("ParamsInvalid", `${field} must be an integer >= 1`);
    }
  }
  if (!isSafeInteger(d.expiry) || d.expiry < 0) {
    return refused("ParamsInvalid", "expiry must be a non-negative integer (unix seconds)");
  }
  if (!isString(d.transactionId) || !BYTES32.test(d.transactionId)) {
    return refused("ParamsInvalid", "transactionId must be 32 bytes of hex");
  }
  if (!isString(d.callDataHash) || !BYTES32.test(d.callDataHash)) {
    return refused("ParamsInvalid", "callDataHash must be 32 bytes of hex");
  }
  if (
    !isString(d.encryptedCallData) ||
    d.encryptedCallData.length > 2 + 2 * MAX_ENCRYPTED_CALL_DATA_BYTES ||
    !HEX.test(d.encryptedCallData)
  ) {
    return refused(
      "ParamsInvalid",
      `encryptedCallData must be hex of whole bytes, at most ${MAX_ENCRYPTED_CALL_DATA_BYTES} bytes`,
    );
  }
  if (typeof d.dryRun !== "boolean") {
    return refused("ParamsInvalid", "dryRun must be a boolean");
  }
  if (!isString(d.amount)) {
    return refused("ParamsInvalid", "amount must be a string of decimal digits");
  }
  if (d.amount.length > MAX_UINT256_DIGITS || !DECIMAL.test(d.amount)) {
    return refused("AmountInvalid", "amount must be a uint256 in decimal digits (no sign, point or exponent)");
  }
  const amount = BigInt(d.amount);
  if (amount >= UINT256_LIMIT) {
    return refused("AmountInvalid", "amount is outside the uint256 range");
  }
  if (amount === 0n) {
    return refused("ZeroValueBid", "Amount for request was invalid: must be integer greater than 0");
  }
  const payload: AuctionPayload = {
    user: d.user as string,
    initiator: d.initiator as string,
    sendingChainId: d.sendingChainId as number,
    sendingAssetId: d.sendingAssetId as string,
    amount: d.amount,
    receivingChainId: d.receivingChainId as number,
    receivingAssetId: d.receivingAssetId as string,
    receivingAddress: d.receivingAddress as string,
    expiry: d.expiry,
    transactionId: d.transactionId,
    encryptedCallData: d.encryptedCallData,
    callDataHash: d.callDataHash,
    callTo: d.callTo as string,
    dryRun: d.dryRun,
  };
  return { ok: true, payload, amount };
}

/** Identifying fields of a request for its log line, whatever shape it had; strings are cut short. */
export function auctionLogFields(data: unknown): Record<string, unknown> {
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    return {};
  }
  const d = data as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of ["transactionId", "user"] as const) {
    if (isString(d[field])) {
      out[field] = d[field].slice(0, 66);
    }
  }
  for (const field of CHAIN_FIELDS) {
    if (isSafeInteger(d[field])) {
      out[field] = d[field];
    }
  }
  return out;
}

function refused(code: AuctionRefusal["code"], detail: string): ParsedAuctionPayload {
  return { ok: false, refusal: refusal(code, detail) };
}

function isString(value: unknown): value is string {
  return typeof value === "string";
}

function isSafeInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value);
}

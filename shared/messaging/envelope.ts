import { InvalidEnvelopeError } from "./errors";
import type { NxtpErrorJson } from "./types";

/**
 * The message envelope (docs/protocol.md#envelope): `{responseInbox, data, version, error}` as JSON text. Encoding
 * matches the original byte for byte in key order and its undefined → null replacer; parsing is defensive, because
 * anyone on the network can publish to the subjects a router serves.
 */
export const ENVELOPE_VERSION = "0.0.1";
/** Bodies above this are dropped unread. Real auction requests are ~1 KiB and meta-tx requests a few KiB. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024;
/** The SDK's inboxes are `_INBOX.<uuid>/<n>` (~50 chars); anything far longer is garbage or abuse. */
export const MAX_INBOX_LENGTH = 256;

export interface Envelope {
  readonly responseInbox: string | null;
  readonly data: unknown;
  readonly version: string;
  readonly error: NxtpErrorJson | null;
}

export interface EncodeEnvelopeParams {
  readonly responseInbox: string | null;
  readonly data: unknown;
  readonly error?: NxtpErrorJson | null;
}

export interface ParseEnvelopeOptions {
  /** Upper bound on the body's UTF-8 byte length; DEFAULT_MAX_PAYLOAD_BYTES when omitted. */
  readonly maxBytes?: number;
  /** Requests must carry an inbox to answer to; responses may carry null. */
  readonly requireInbox: boolean;
}

/**
 * Like the original: every `undefined` becomes `null`, so optional fields are present (a dry-run bid has
 * `"bidSignature": null`). A bigint becomes its decimal string, the project's JSON form of amounts,
 * instead of making JSON.stringify throw on the publish path.
 */
function replacer(_key: string, value: unknown): unknown {
  if (value === undefined) {
    return null;
  }
  return typeof value === "bigint" ? value.toString() : value;
}

export function encodeEnvelope(params: EncodeEnvelopeParams): string {
  const error = params.error
    ? { message: params.error.message, context: params.error.context, type: params.error.type }
    : null;
  const envelope = { responseInbox: params.responseInbox, data: params.data, version: ENVELOPE_VERSION, error };
  // A replacer takes JSON.stringify off its fast path (a call into JS per key, several times slower on a bid):
  // when nothing in the value needs it, the output is the same without.
  return needsReplacer(envelope, 0) ? JSON.stringify(envelope, replacer) : JSON.stringify(envelope);
}

/** Deeper than this, the check gives up and the replacer runs (bids and meta-tx bodies are 3–4 levels). */
const MAX_PLAIN_DEPTH = 16;

/**
 * False when JSON.stringify alone writes what it writes with `replacer`: only strings, finite or non-finite
 * numbers, booleans, nulls, arrays and plain objects (no undefined, bigint, function, symbol, nor any object
 * with a prototype of its own, such as Date or Buffer, whose toJSON output the replacer would also see).
 */
function needsReplacer(value: unknown, depth: number): boolean {
  if (value === null) {
    return false;
  }
  const type = typeof value;
  if (type === "string" || type === "number" || type === "boolean") {
    return false;
  }
  if (type !== "object" || depth > MAX_PLAIN_DEPTH) {
    return true;
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      if (needsReplacer(item, depth + 1)) return true;
    }
    return false;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    return true;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (needsReplacer(record[key], depth + 1)) return true;
  }
  return false;
}

/** Accepts any version whose major part (text before the first ".") is "0" (docs/protocol.md#envelope). */
export function isSupportedVersion(version: string): boolean {
  const dot = version.indexOf(".");
  return (dot === -1 ? version : version.slice(0, dot)) === "0";
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses a raw body into an Envelope or throws InvalidEnvelopeError. The size check comes first and
 * reads only the length, so a 1 MB body costs nothing more than a small one before it is refused.
 */
export function parseEnvelope(body: Uint8Array | string, options: ParseEnvelopeOptions): Envelope {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const sizeBytes = typeof body === "string" ? utf8Length(body, maxBytes) : body.byteLength;
  if (sizeBytes > maxBytes) {
    throw new InvalidEnvelopeError("too_large", "message body exceeds the size limit", { sizeBytes, maxBytes });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === "string" ? body : UTF8.decode(body));
  } catch {
    throw new InvalidEnvelopeError("not_utf8_json", "message body is not UTF-8 JSON", { sizeBytes });
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new InvalidEnvelopeError("not_object", "message body is not a JSON object", { sizeBytes });
  }
  const raw = parsed as Record<string, unknown>;
  const version = raw.version;
  if (typeof version !== "string" || !isSupportedVersion(version)) {
    throw new InvalidEnvelopeError("bad_version", "envelope version is missing or its major is not 0", {
      version: typeof version === "string" ? version.slice(0, 32) : typeof version,
    });
  }
  return {
    responseInbox: readInbox(raw.responseInbox, options.requireInbox),
    data: raw.data ?? null,
    version,
    error: readError(raw.error),
  };
}

function readInbox(value: unknown, required: boolean): string | null {
  if ((value === null || value === undefined) && !required) {
    return null;
  }
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_INBOX_LENGTH) {
    throw new InvalidEnvelopeError("bad_inbox", "envelope responseInbox is missing, not a string or too long", {
      inboxType: typeof value,
      inboxLength: typeof value === "string" ? value.length : undefined,
    });
  }
  return value;
}

/** nxtp's jsonifyError shape; `type` and `context` are filled in when a peer left them out. */
function readError(value: unknown): NxtpErrorJson | null {
  if (value === null || value === undefined) {
    return null;
  }
  const raw = value as Record<string, unknown>;
  if (typeof value !== "object" || Array.isArray(value) || typeof raw.message !== "string") {
    throw new InvalidEnvelopeError("bad_error", "envelope error is not an object with a message");
  }
  const context =
    raw.context !== null && typeof raw.context === "object" && !Array.isArray(raw.context)
      ? (raw.context as Record<string, unknown>)
      : {};
  return { message: raw.message, type: typeof raw.type === "string" ? raw.type : "Error", context };
}

/** UTF-8 length; a string longer in UTF-16 units than the limit is refused without measuring (bytes ≥ units). */
function utf8Length(text: string, maxBytes: number): number {
  return text.length > maxBytes ? text.length : Buffer.byteLength(text, "utf8");
}

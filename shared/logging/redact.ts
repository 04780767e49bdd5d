/**
 * Secret scrubbing for everything that leaves the process as text (logs, API errors, check-config output).
 * Two layers: keys whose names say "secret" are masked wherever they appear, and the literal secret values
 * known at start-up (admin token, mnemonic, ...) are cut out of any string, so a secret that slipped into a
 * message is still masked.
 */
export const REDACTED = "[redacted]";

const SECRET_KEY = /(token|mnemonic|private|secret|password|passphrase|seed|apikey|api_key|authorization)/i;

/** Long opaque path segments and query values are how RPC vendors embed API keys in URLs. */
const KEY_LIKE_SEGMENT = /^[A-Za-z0-9_-]{16,}$/;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/** A URL without user info, query values or key-like path segments; a non-URL comes back unchanged. */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return raw;
  }
  if (!url.host) {
    return raw;
  }
  const hadCredentials = url.username !== "" || url.password !== "";
  const hasKeyLikeSegment = url.pathname.split("/").some((s) => KEY_LIKE_SEGMENT.test(s));
  if (!hadCredentials && !hasKeyLikeSegment && url.search === "") {
    return raw;
  }
  url.username = "";
  url.password = "";
  const segments = url.pathname.split("/").map((s) => (KEY_LIKE_SEGMENT.test(s) ? "***" : s));
  url.pathname = segments.join("/");
  for (const key of [...url.searchParams.keys()]) {
    url.searchParams.set(key, "***");
  }
  const text = url.toString();
  return hadCredentials ? text.replace("//", "//***@") : text;
}

const URL_IN_TEXT = /\b(?:https?|wss?|nats|redis|rediss|postgres|postgresql):\/\/[^\s"'<>]+/g;

export interface Redactor {
  /** Masks secrets in a string: known secret values and credentials inside URLs. */
  text(value: string): string;
  /**
   * A deep copy of `value` with secret-named keys masked and every string passed through `text` (bigints as
   * decimal strings, errors as plain objects). `sortKeys` writes every object's keys in sorted order, so the
   * copy's JSON.stringify is the sorted line logform's json format would write, in one pass.
   */
  value<T>(value: T, options?: { readonly sortKeys?: boolean }): T;
}

export function createRedactor(secretValues: ReadonlyArray<string | undefined> = []): Redactor {
  // Longest first, so a secret that contains another is masked whole. Every non-empty secret is masked, however
  // short: a short one masks its text wherever it appears, which is noisy but never leaks it.
  const secrets = secretValues.filter((s): s is string => typeof s === "string" && s.length > 0);
  secrets.sort((a, b) => b.length - a.length);

  const text = (value: string): string => {
    let out = value;
    for (const secret of secrets) {
      if (out.includes(secret)) {
        out = out.split(secret).join(REDACTED);
      }
    }
    // Every URL the pattern matches contains "://": most strings (hex, codes) skip the regex entirely.
    return out.includes("://") ? out.replace(URL_IN_TEXT, (url) => redactUrl(url)) : out;
  };

  const walk = (value: unknown, seen: WeakSet<object>, sortKeys: boolean): unknown => {
    if (typeof value === "string") {
      return text(value);
    }
    if (typeof value === "bigint") {
      return value.toString();
    }
    if (value === null || typeof value !== "object") {
      return value;
    }
    if (seen.has(value)) {
      return "[circular]";
    }
    seen.add(value);
    if (Array.isArray(value)) {
      return value.map((v) => walk(v, seen, sortKeys));
    }
    if (value instanceof Error) {
      const out: Record<string, unknown> = { name: value.name, message: text(value.message) };
      for (const [k, v] of Object.entries(value)) {
        out[k] = isSecretKey(k) ? REDACTED : walk(v, seen, sortKeys);
      }
      if (value.stack) {
        out.stack = text(value.stack);
      }
      return sortKeys ? sorted(out) : out;
    }
    const record = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    const keys = Object.keys(record);
    if (sortKeys) keys.sort();
    for (const k of keys) {
      const v = record[k];
      out[k] = isSecretKey(k) && v !== undefined && v !== null ? REDACTED : walk(v, seen, sortKeys);
    }
    return out;
  };

  return {
    text,
    value: <T>(v: T, options?: { readonly sortKeys?: boolean }): T =>
      walk(v, new WeakSet(), options?.sortKeys === true) as T,
  };
}

function sorted(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(record).sort()) out[k] = record[k];
  return out;
}

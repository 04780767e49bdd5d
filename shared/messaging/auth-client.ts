import type { RouterSigner } from "../signer/router-signer";
import { errorMessage } from "../errors";
import { authMessage } from "./auth-message";
import { MessagingAuthError, type AuthStep } from "./errors";

/** Every auth HTTP call is bounded: a hung auth server must not hang start-up or a reconnect forever. */
export const DEFAULT_AUTH_TIMEOUT_MS = 10_000;
/** Nonces are `0x` + 64 hex chars and tokens a JWT of a few hundred bytes; anything huge is not either. */
const MAX_BODY_CHARS = 16_384;
/** Error bodies are quoted in errors (e.g. "Verification failed, expected …"), clipped. */
const ERROR_BODY_CHARS = 200;

export type MessagingAuthSigner = Pick<RouterSigner, "getAddress" | "signMessage">;

export interface FetchMessagingTokenParams {
  /** e.g. https://auth.connext.network; a trailing slash is tolerated. */
  readonly authUrl: string;
  readonly signer: MessagingAuthSigner;
  readonly timeoutMs?: number;
}

/**
 * The docs/protocol.md#login flow: GET the nonce for our checksummed address, personal_sign prefix + nonce, POST the
 * signature, receive the bearer token. Both bodies may be plain text (Connext's server) or a JSON
 * string (stubs, the SDK's axios accepts both). Throws MessagingAuthError naming the step.
 */
export async function fetchMessagingToken(params: FetchMessagingTokenParams): Promise<string> {
  const base = params.authUrl.replace(/\/+$/, "");
  const timeoutMs = params.timeoutMs ?? DEFAULT_AUTH_TIMEOUT_MS;
  const address = await params.signer.getAddress();

  const nonce = await httpText("nonce", `${base}/auth/${address}`, { method: "GET" }, timeoutMs);

  let sig: string;
  try {
    sig = await params.signer.signMessage(authMessage(nonce));
  } catch (err) {
    throw new MessagingAuthError("sign", `messaging auth failed at sign: ${messageOf(err)}`, {}, { cause: err });
  }

  return httpText(
    "token",
    `${base}/auth`,
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sig, signerAddress: address }),
    },
    timeoutMs,
  );
}

async function httpText(step: AuthStep, url: string, init: RequestInit, timeoutMs: number): Promise<string> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    text = await response.text();
  } catch (err) {
    // fetch rejects with a DOMException on timeout; checked by name, since it may come from another realm.
    const name = (err as { name?: unknown } | null)?.name;
    const timedOut = name === "TimeoutError" || name === "AbortError";
    const reason = timedOut ? `no answer within ${timeoutMs} ms` : describe(err);
    throw new MessagingAuthError(step, `messaging auth failed at ${step}: ${reason}`, { timeoutMs }, { cause: err });
  }
  if (!response.ok) {
    throw new MessagingAuthError(step, `messaging auth failed at ${step}: HTTP ${response.status} ${clip(text)}`, {
      status: response.status,
    });
  }
  const value = unwrapJsonString(text.trim());
  if (value.length === 0 || value.length > MAX_BODY_CHARS) {
    // Never quote a success body: at the token step it is the secret itself.
    throw new MessagingAuthError(
      step,
      `messaging auth failed at ${step}: HTTP ${response.status} with an empty or oversized body`,
      {
        status: response.status,
        bodyLength: value.length,
      },
    );
  }
  return value;
}

/** `"abc"` (a JSON string) → `abc`; anything else is taken as the plain-text value. */
function unwrapJsonString(text: string): string {
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === "string") {
        return parsed.trim();
      }
    } catch {
      // Not JSON after all: plain text that happens to be quoted.
    }
  }
  return text;
}

/** undici wraps socket errors as "fetch failed" with the useful part in `cause`. */
function describe(err: unknown): string {
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause === undefined ? messageOf(err) : `${messageOf(err)} (${messageOf(cause)})`;
}

/** Errors from fetch may come from another realm (jest's vm, undici), so `instanceof Error` is not reliable. */
function messageOf(err: unknown): string {
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === "string" ? message : errorMessage(err);
}

function clip(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > ERROR_BODY_CHARS ? `${oneLine.slice(0, ERROR_BODY_CHARS)}…` : oneLine;
}

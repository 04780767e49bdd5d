import {
  MessagePrefix,
  Signature,
  computeAddress,
  concat,
  hexlify,
  keccak256,
  recoverAddress,
  toUtf8Bytes,
} from "ethers";
import { redactUrl } from "../logging/redact";
import { RemoteSignerBadResponseError, RemoteSignerUnavailableError, SignerConfigError } from "./errors";
import { RouterSigner, UnsignedTransaction, sanitizeSignatureV, toEthersTransaction } from "./router-signer";

export const DEFAULT_REMOTE_SIGNER_TIMEOUT_MS = 10_000;

export interface CreateRemoteSignerParams {
  /** web3signer base URL; may carry `user:pass@` (sent as Basic auth) and is only ever logged redacted. */
  url: string;
  /** Per HTTP call, covering connect, headers and body. */
  timeoutMs?: number;
  fetchImpl?: typeof fetch;
}

/** Same wording as the original client, so operators searching old runbooks find it. */
const BAD_RESPONSE_MESSAGE =
  "Received bad response from web3signer instance; make sure your key file is configured correctly.";

const RAW_SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
const SECP256K1_HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

interface Endpoint {
  /** Base URL without credentials or fragment; its pathname is replaced per call. */
  base: URL;
  /** Base path without trailing slash ("" for a bare origin): a URL's pathname can never be empty. */
  basePath: string;
  authorization?: string;
}

interface RemoteKey {
  /** Exactly as web3signer listed it: the sign path must use its own spelling. */
  publicKey: string;
  address: string;
}

interface HttpClient {
  get(path: string): Promise<string>;
  post(path: string, body: unknown): Promise<string>;
}

export function createRemoteSigner(params: CreateRemoteSignerParams): RouterSigner {
  const http = createHttpClient({
    endpoint: parseEndpoint(params.url),
    timeoutMs: parseTimeout(params.timeoutMs),
    fetchImpl: params.fetchImpl ?? fetch,
  });
  const getKey = cacheKeyLookup(() => fetchFirstKey(http));

  const signDigestData = async (data: string, digest: string): Promise<string> => {
    const key = await getKey();
    const raw = await requestSignature(http, key.publicKey, data);
    const sig = sanitizeSignatureV(raw);
    verifySignature({ digest, sig, expected: key.address });
    return sig;
  };

  const signer: RouterSigner = {
    kind: "remote",
    getAddress: async () => (await getKey()).address,
    signMessage: async (message) => {
      // web3signer keccaks whatever it gets, so it receives the EIP-191 preimage, not the hash.
      const data = personalSignPreimage(message);
      return signDigestData(data, keccak256(data));
    },
    signTransaction: async (tx: UnsignedTransaction) => {
      // Built before any network call so a malformed tx fails without touching the signer.
      const transaction = toEthersTransaction(tx);
      const sig = await signDigestData(transaction.unsignedSerialized, transaction.unsignedHash);
      transaction.signature = Signature.from(sig);
      return transaction.serialized;
    },
  };
  return Object.freeze(signer);
}

/** The bytes ethers.hashMessage hashes: "\x19Ethereum Signed Message:\n" + byte length + message. */
function personalSignPreimage(message: string | Uint8Array): string {
  const bytes = typeof message === "string" ? toUtf8Bytes(message) : message;
  return hexlify(concat([toUtf8Bytes(MessagePrefix), toUtf8Bytes(String(bytes.length)), bytes]));
}

/**
 * The original refetched the key list before every signature; the key of a running signer does not
 * change, so the first success is kept. Concurrent first calls share one request, and a failure is not
 * cached so the next call tries again.
 */
function cacheKeyLookup(load: () => Promise<RemoteKey>): () => Promise<RemoteKey> {
  let pending: Promise<RemoteKey> | undefined;
  return () => {
    if (!pending) {
      pending = load().catch((err: unknown) => {
        pending = undefined;
        throw err;
      });
    }
    return pending;
  };
}

async function fetchFirstKey(http: HttpClient): Promise<RemoteKey> {
  const body = await http.get("/api/v1/eth1/publicKeys");
  const first = parseKeyList(body);
  return { publicKey: first, address: addressOfPublicKey(first) };
}

function parseKeyList(body: string): string {
  if (body.trim() === "") {
    throw new RemoteSignerBadResponseError(BAD_RESPONSE_MESSAGE, { call: "publicKeys", reason: "empty body" });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new RemoteSignerBadResponseError(BAD_RESPONSE_MESSAGE, { call: "publicKeys", reason: "not JSON" });
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || typeof parsed[0] !== "string") {
    throw new RemoteSignerBadResponseError("remote signer lists no public keys", { call: "publicKeys" });
  }
  return parsed[0];
}

/** web3signer lists the 64-byte key without the 04 prefix; accept it with the prefix (and 0x) as well. */
function addressOfPublicKey(publicKey: string): string {
  const hex = publicKey.replace(/^0x/i, "");
  const uncompressed = /^[0-9a-fA-F]{128}$/.test(hex) ? `0x04${hex}` : `0x${hex}`;
  const malformed = (cause?: unknown): RemoteSignerBadResponseError =>
    new RemoteSignerBadResponseError("remote signer listed a malformed public key", { call: "publicKeys" }, { cause });
  if (!/^0x04[0-9a-fA-F]{128}$/.test(uncompressed)) {
    throw malformed();
  }
  try {
    // Also rejects 64 bytes that are not a point on the curve.
    return computeAddress(uncompressed);
  } catch (err) {
    throw malformed(err);
  }
}

async function requestSignature(http: HttpClient, publicKey: string, data: string): Promise<string> {
  const body = (await http.post(`/api/v1/eth1/sign/${publicKey}`, { data })).trim();
  if (body === "") {
    throw new RemoteSignerBadResponseError(BAD_RESPONSE_MESSAGE, { call: "sign", reason: "empty body" });
  }
  if (!RAW_SIGNATURE.test(body)) {
    throw new RemoteSignerBadResponseError("remote signer returned a malformed signature", { call: "sign" });
  }
  return body;
}

/**
 * A signer pointed at the wrong key file still answers 200 with a well-formed signature; only recovering
 * the address catches that before a bad bid or transaction leaves the process. High-s is refused too:
 * nodes reject such transactions (EIP-2) with an error far from the cause.
 */
function verifySignature(params: { digest: string; sig: string; expected: string }): void {
  let recovered: string;
  try {
    const signature = Signature.from(params.sig);
    if (BigInt(signature.s) > SECP256K1_HALF_N) {
      throw new Error("non-canonical (high-s) signature");
    }
    recovered = recoverAddress(params.digest, signature);
  } catch (err) {
    throw new RemoteSignerBadResponseError(
      "remote signer returned an unusable signature",
      { call: "sign" },
      { cause: err },
    );
  }
  if (recovered !== params.expected) {
    throw new RemoteSignerBadResponseError("remote signer signed with a different key than it lists", {
      call: "sign",
      expected: params.expected,
      recovered,
    });
  }
}

function parseEndpoint(raw: string): Endpoint {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Unparseable means redactUrl cannot clean it either, so nothing of it is echoed.
    throw new SignerConfigError("remoteSignerUrl is not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new SignerConfigError(`remoteSignerUrl must be http(s): ${redactUrl(raw)}`);
  }
  // fetch refuses URLs with credentials, so user info moves into a Basic auth header.
  const authorization =
    url.username !== "" || url.password !== ""
      ? `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}`
      : undefined;
  url.username = "";
  url.password = "";
  url.hash = "";
  return { base: url, basePath: url.pathname.replace(/\/+$/, ""), authorization };
}

function parseTimeout(timeoutMs: number | undefined): number {
  const value = timeoutMs ?? DEFAULT_REMOTE_SIGNER_TIMEOUT_MS;
  if (!Number.isFinite(value) || value <= 0) {
    throw new SignerConfigError("remote signer timeoutMs must be a positive number", { timeoutMs: value });
  }
  return value;
}

function createHttpClient(params: { endpoint: Endpoint; timeoutMs: number; fetchImpl: typeof fetch }): HttpClient {
  const call = async (path: string, init: { method: string; body?: string }): Promise<string> => {
    const url = new URL(params.endpoint.base.toString());
    url.pathname = `${params.endpoint.basePath}${path}`;
    const headers: Record<string, string> = { accept: "application/json, text/plain" };
    if (init.body !== undefined) {
      headers["content-type"] = "application/json";
    }
    if (params.endpoint.authorization) {
      headers.authorization = params.endpoint.authorization;
    }
    const { status, body } = await fetchWithTimeout({ ...params, url: url.toString(), init: { ...init, headers } });
    assertStatus(status, url.toString());
    return body;
  };
  return {
    get: (path) => call(path, { method: "GET" }),
    post: (path, body) => call(path, { method: "POST", body: JSON.stringify(body) }),
  };
}

/** The timer covers reading the body too: a server that sends headers and then stalls is also "down". */
async function fetchWithTimeout(params: {
  url: string;
  init: RequestInit;
  timeoutMs: number;
  fetchImpl: typeof fetch;
}): Promise<{ status: number; body: string }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), params.timeoutMs);
  try {
    const response = await params.fetchImpl(params.url, { ...params.init, signal: controller.signal });
    return { status: response.status, body: await response.text() };
  } catch (err) {
    const safeUrl = redactUrl(params.url);
    const reason = controller.signal.aborted ? `timed out after ${params.timeoutMs} ms` : "is unreachable";
    throw new RemoteSignerUnavailableError(`remote signer ${reason}: ${safeUrl}`, { url: safeUrl }, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * 5xx, 408 and 429 are the server or a proxy in front of it saying "not now", so they are retriable;
 * any other non-2xx means the request itself is wrong (unknown key, bad path) and will not heal.
 */
function assertStatus(status: number, url: string): void {
  if (status >= 200 && status < 300) {
    return;
  }
  const safeUrl = redactUrl(url);
  const message = `remote signer answered HTTP ${status}: ${safeUrl}`;
  if (status >= 500 || status === 408 || status === 429) {
    throw new RemoteSignerUnavailableError(message, { url: safeUrl, status });
  }
  throw new RemoteSignerBadResponseError(message, { url: safeUrl, status });
}

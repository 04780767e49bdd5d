import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { verifyMessage } from "ethers";
import { authMessage } from "../../shared/messaging/auth-message";
import { sourceAddressKey } from "../../shared/source-address";
import type { Logger } from "../../shared/logging/create-logger";

/**
 * A local stand-in for the Connext auth server (docs/protocol.md#login), for `network: local` only. Same
 * routes, bodies and error texts, so the router's and the real SDK's login code run unchanged against
 * it. Tokens are opaque random strings, not RS256 JWTs: the local nats-server runs without auth and never
 * looks at them; `verifyToken` is there for anything local that wants to check one.
 */
/**
 * A login signs its nonce at once (nonce → personal_sign → POST, well under a second), so 10 minutes is
 * ample, and it bounds how long a flood of nonce requests can matter.
 */
export const NONCE_TTL_MS = 10 * 60 * 1000;
export const DEFAULT_TOKEN_TTL_SEC = 24 * 3600;
/**
 * Live nonces are never dropped for someone else's request (an unauthenticated `GET /auth/<victim>` used to
 * push out the victim's pending nonce). A requester (source address; an IPv6 /64) holds at most
 * NONCES_PER_REQUESTER_ADDRESS nonces per address (instances sharing a signer log in concurrently) and
 * NONCES_PER_REQUESTER in all: past either, its own oldest goes. An address holds at most
 * NONCES_PER_ADDRESS live nonces (each login tries them all, so this bounds its signature recoveries) and
 * the server MAX_LIVE_NONCES: past those a new request is refused (429 / 503), never served by eviction.
 * So a flood can only delay a new login until the flood's nonces lapse (NONCE_TTL_MS), never cancel one.
 */
export const NONCES_PER_REQUESTER_ADDRESS = 8;
export const NONCES_PER_REQUESTER = 256;
export const NONCES_PER_ADDRESS = 64;
export const MAX_LIVE_NONCES = 100_000;
const MAX_TOKENS = 10_000;
const MAX_BODY_BYTES = 4096;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export interface CreateAuthServerParams {
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly logger?: Logger;
  readonly tokenTtlSec?: number;
}

export interface AuthServerStats {
  readonly nonceRequests: number;
  readonly tokensIssued: number;
  readonly verificationFailures: number;
}

export interface AuthServer {
  /** http://host:port, the `authUrl` clients use. */
  readonly url: string;
  readonly port: number;
  stats(): AuthServerStats;
  /** The address a live token was issued to, or undefined for an unknown or expired token. */
  verifyToken(token: string): string | undefined;
  close(): Promise<void>;
}

interface Pending {
  readonly nonce: string;
  readonly address: string;
  readonly requester: string;
  readonly expiresAtMs: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Starts listening; resolves once connections are accepted, rejects on EADDRINUSE and friends. */
export async function createAuthServer(params: CreateAuthServerParams): Promise<AuthServer> {
  const logger = params.logger;
  const logins = createLogins((params.tokenTtlSec ?? DEFAULT_TOKEN_TTL_SEC) * 1000, logger);

  const route = async (req: IncomingMessage): Promise<string> => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method === "GET" && path.startsWith("/auth/")) {
      const address = decodeURIComponent(path.slice("/auth/".length));
      if (!ADDRESS.test(address)) {
        throw new HttpError(400, "Invalid address");
      }
      return logins.issueNonce(address, sourceAddressKey(req.socket.remoteAddress));
    }
    if (req.method === "POST" && path === "/auth") {
      return logins.issueToken(await readJson(req));
    }
    throw new HttpError(404, "Not found");
  };

  const server = createServer((req, res) => {
    route(req).then(
      (text) => send(res, 200, text),
      (err: unknown) => {
        const status = err instanceof HttpError ? err.status : 500;
        if (!(err instanceof HttpError)) {
          logger?.error("auth request failed", {
            at: "messaging-auth.request",
            error: err instanceof Error ? err.message : String(err),
          });
        }
        send(res, status, err instanceof Error ? err.message : "Internal error");
      },
    );
  });
  const port = await listen(server, params.host, params.port);
  const url = `http://${params.host.includes(":") ? `[${params.host}]` : params.host}:${port}`;
  logger?.info("messaging auth server listening", { at: "messaging-auth.listen", url });

  return {
    url,
    port,
    stats: logins.stats,
    verifyToken: logins.verifyToken,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** The server's state: outstanding nonces per address and the tokens issued, both bounded in memory. */
interface Logins {
  /** GET /auth/<address>: a new nonce for the address to sign, on behalf of `requester` (its source). */
  issueNonce(address: string, requester: string): string;
  /** POST /auth {sig, signerAddress}: a token, if `sig` is the address's signature over one of its live nonces. */
  issueToken(body: unknown): string;
  verifyToken(token: string): string | undefined;
  stats(): AuthServerStats;
}

function createLogins(tokenTtlMs: number, logger: Logger | undefined): Logins {
  const nonces = createNonceStore();
  const tokens = new Map<string, { address: string; expiresAtMs: number }>();
  const counts = { nonceRequests: 0, tokensIssued: 0, verificationFailures: 0 };

  const issueNonce = (address: string, requester: string): string => {
    const pending = nonces.add(address, requester, Date.now());
    counts.nonceRequests += 1;
    logger?.info("nonce issued", { at: "messaging-auth.nonce", address });
    return pending.nonce;
  };

  const issueToken = (body: unknown): string => {
    const { sig, signerAddress } = (body ?? {}) as Record<string, unknown>;
    if (typeof sig !== "string" || typeof signerAddress !== "string") {
      throw new HttpError(400, "Body must be JSON {sig, signerAddress}");
    }
    const now = Date.now();
    const pending = nonces.liveFor(signerAddress, now);
    if (pending.length === 0) {
      throw new HttpError(500, "User hasn't requested a nonce yet");
    }
    let recovered: string | undefined;
    for (const candidate of pending) {
      recovered = recoverOrUndefined(candidate.nonce, sig);
      // Exact, case-sensitive comparison like the Connext server: clients must send the checksummed form.
      if (recovered === signerAddress) {
        nonces.remove(candidate);
        const token = randomBytes(32).toString("base64url");
        tokens.set(token, { address: signerAddress, expiresAtMs: now + tokenTtlMs });
        evictOldest(tokens, MAX_TOKENS);
        counts.tokensIssued += 1;
        logger?.info("token issued", { at: "messaging-auth.token", address: signerAddress });
        return token;
      }
    }
    counts.verificationFailures += 1;
    logger?.warn("signature verification failed", {
      at: "messaging-auth.token",
      address: signerAddress,
      recovered: recovered ?? null,
    });
    throw new HttpError(
      401,
      `Verification failed, expected ${signerAddress}, got ${recovered ?? "no valid signature over a live nonce"}`,
    );
  };

  return {
    issueNonce,
    issueToken,
    verifyToken: (token) => {
      const entry = tokens.get(token);
      return entry && entry.expiresAtMs > Date.now() ? entry.address : undefined;
    },
    stats: () => ({ ...counts }),
  };
}

/** Live nonces in issue order (one TTL for all, so the oldest lapse first), indexed by address and requester. */
function createNonceStore() {
  const all = new Map<string, Pending>();
  const byAddress = new Map<string, Pending[]>();
  const byRequester = new Map<string, Pending[]>();

  const detach = (index: Map<string, Pending[]>, key: string, pending: Pending): void => {
    const list = index.get(key);
    const at = list ? list.indexOf(pending) : -1;
    if (list && at >= 0) {
      list.splice(at, 1);
      if (list.length === 0) {
        index.delete(key);
      }
    }
  };
  const remove = (pending: Pending): void => {
    all.delete(pending.nonce);
    detach(byAddress, pending.address, pending);
    detach(byRequester, pending.requester, pending);
  };
  const prune = (now: number): void => {
    for (const pending of all.values()) {
      if (pending.expiresAtMs > now) {
        return;
      }
      remove(pending);
    }
  };

  return {
    add(address: string, requester: string, now: number): Pending {
      prune(now);
      const own = byRequester.get(requester) ?? [];
      const ownForAddress = own.filter((p) => p.address === address);
      // The requester's own oldest makes room; nobody else's nonce is ever dropped before it lapses.
      const evict =
        ownForAddress.length >= NONCES_PER_REQUESTER_ADDRESS
          ? ownForAddress[0]
          : own.length >= NONCES_PER_REQUESTER
            ? own[0]
            : undefined;
      if (evict) {
        remove(evict);
      } else if ((byAddress.get(address)?.length ?? 0) >= NONCES_PER_ADDRESS) {
        throw new HttpError(429, "Too many pending nonces for this address; retry in a few minutes");
      } else if (all.size >= MAX_LIVE_NONCES) {
        throw new HttpError(503, "Too many pending nonces; retry in a few minutes");
      }
      const pending: Pending = {
        nonce: `0x${randomBytes(32).toString("hex")}`,
        address,
        requester,
        expiresAtMs: now + NONCE_TTL_MS,
      };
      all.set(pending.nonce, pending);
      byAddress.set(address, [...(byAddress.get(address) ?? []), pending]);
      byRequester.set(requester, [...own, pending]);
      return pending;
    },
    liveFor(address: string, now: number): Pending[] {
      prune(now);
      return [...(byAddress.get(address) ?? [])];
    },
    remove,
  };
}

/** The port the server listens on, once it accepts connections. */
function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port }, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function recoverOrUndefined(nonce: string, sig: string): string | undefined {
  try {
    return verifyMessage(authMessage(nonce), sig);
  } catch {
    return undefined;
  }
}

function evictOldest<K, V>(map: Map<K, V>, max: number): void {
  while (map.size > max) {
    const oldest = map.keys().next();
    if (oldest.done) {
      return;
    }
    map.delete(oldest.value);
  }
}

function send(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) {
      throw new HttpError(413, "Body too large");
    }
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw new HttpError(400, "Body must be JSON {sig, signerAddress}");
  }
}

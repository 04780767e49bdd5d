import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { verifyMessage } from "ethers";
import { authMessage } from "../../shared/messaging/auth-message";
import type { Logger } from "../../shared/logging/create-logger";

/**
 * A local stand-in for the Connext auth server (docs/protocol.md#login), for `network: local` only. Same
 * routes, bodies and error texts, so the router's and the real SDK's login code run unchanged against
 * it. Tokens are opaque random strings, not RS256 JWTs: the local nats-server runs without auth and never
 * looks at them; `verifyToken` is there for anything local that wants to check one.
 */
export const NONCE_TTL_MS = 24 * 3600 * 1000;
export const DEFAULT_TOKEN_TTL_SEC = 24 * 3600;
/** Outstanding nonces kept per address: auction instances sharing one signer log in concurrently. */
const NONCES_PER_ADDRESS = 8;
/** Bounds on memory, in case something hammers GET /auth/<random address>; oldest entries go first. */
const MAX_ADDRESSES = 10_000;
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
      return logins.issueNonce(address);
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
  /** GET /auth/<address>: a new nonce for the address to sign. */
  issueNonce(address: string): string;
  /** POST /auth {sig, signerAddress}: a token, if `sig` is the address's signature over one of its live nonces. */
  issueToken(body: unknown): string;
  verifyToken(token: string): string | undefined;
  stats(): AuthServerStats;
}

function createLogins(tokenTtlMs: number, logger: Logger | undefined): Logins {
  const nonces = new Map<string, Pending[]>();
  const tokens = new Map<string, { address: string; expiresAtMs: number }>();
  const counts = { nonceRequests: 0, tokensIssued: 0, verificationFailures: 0 };

  const issueNonce = (address: string): string => {
    const nonce = `0x${randomBytes(32).toString("hex")}`;
    const now = Date.now();
    const live = (nonces.get(address) ?? []).filter((p) => p.expiresAtMs > now).slice(-(NONCES_PER_ADDRESS - 1));
    live.push({ nonce, expiresAtMs: now + NONCE_TTL_MS });
    nonces.delete(address);
    nonces.set(address, live);
    evictOldest(nonces, MAX_ADDRESSES);
    counts.nonceRequests += 1;
    logger?.info("nonce issued", { at: "messaging-auth.nonce", address });
    return nonce;
  };

  const issueToken = (body: unknown): string => {
    const { sig, signerAddress } = (body ?? {}) as Record<string, unknown>;
    if (typeof sig !== "string" || typeof signerAddress !== "string") {
      throw new HttpError(400, "Body must be JSON {sig, signerAddress}");
    }
    const pending = nonces.get(signerAddress);
    if (!pending || pending.length === 0) {
      throw new HttpError(500, "User hasn't requested a nonce yet");
    }
    const now = Date.now();
    let recovered: string | undefined;
    for (const candidate of pending) {
      if (candidate.expiresAtMs <= now) {
        continue;
      }
      recovered = recoverOrUndefined(candidate.nonce, sig);
      // Exact, case-sensitive comparison like the Connext server: clients must send the checksummed form.
      if (recovered === signerAddress) {
        pending.splice(pending.indexOf(candidate), 1);
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

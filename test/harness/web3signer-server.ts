import { AddressInfo } from "node:net";
import { IncomingMessage, ServerResponse, createServer } from "node:http";
import { SigningKey, isHexString, keccak256 } from "ethers";

/**
 * Faults a test can switch on:
 * - "500": every /api call answers HTTP 500.
 * - "empty": every /api call answers 200 with an empty body.
 * - "wrong-key": publicKeys is honest, but signatures come from another key.
 * - "low-v": signatures carry v as 0/1 (recovery id), as some signers do.
 * - "hang": /api calls never answer (the socket stays open until stop()).
 */
export type Web3SignerFault = "none" | "500" | "empty" | "wrong-key" | "low-v" | "hang";

export interface Web3SignerRequest {
  method: string;
  path: string;
  authorization?: string;
}

export interface Web3SignerServer {
  url: string;
  stop(): Promise<void>;
  requests: Array<Web3SignerRequest>;
  setFault(f: Web3SignerFault): void;
}

/** Fixed so a "wrong-key" run is reproducible; not the test mnemonic's key. */
const WRONG_KEY = new SigningKey("0x" + "42".repeat(32));

/**
 * A web3signer (eth1 mode) stand-in over real HTTP, holding one key. It implements the three calls the
 * router makes, with the same shapes: keys listed as 0x + 64 bytes without the 04 prefix, and the sign
 * call keccak-hashing `data` before signing.
 */
export async function startWeb3SignerServer(params: { privateKey: string; host?: string }): Promise<Web3SignerServer> {
  const key = new SigningKey(params.privateKey);
  const listedKey = `0x${key.publicKey.slice(4)}`;
  const requests: Web3SignerRequest[] = [];
  let fault: Web3SignerFault = "none";

  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    requests.push({ method: req.method ?? "", path, authorization: req.headers.authorization });
    route({ req, res, path, fault, key, listedKey }).catch(() => {
      // A harness bug should surface as a 500 in the test, not as an unhandled rejection.
      if (!res.headersSent) {
        send(res, 500, "harness error");
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, params.host ?? "127.0.0.1", () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;

  return {
    url: `http://${address}:${port}`,
    requests,
    setFault: (f) => {
      fault = f;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        // Hung requests would keep close() waiting forever.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface RouteParams {
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  fault: Web3SignerFault;
  key: SigningKey;
  listedKey: string;
}

async function route(p: RouteParams): Promise<void> {
  if (p.req.method === "GET" && p.path === "/upcheck") {
    return send(p.res, 200, "OK");
  }
  if (!p.path.startsWith("/api/")) {
    return send(p.res, 404, "Not Found");
  }
  if (p.fault === "hang") {
    return;
  }
  if (p.fault === "500") {
    return send(p.res, 500, "Internal Server Error");
  }
  if (p.fault === "empty") {
    return send(p.res, 200, "");
  }
  if (p.req.method === "GET" && p.path === "/api/v1/eth1/publicKeys") {
    return send(p.res, 200, JSON.stringify([p.listedKey]), "application/json");
  }
  const signMatch = /^\/api\/v1\/eth1\/sign\/([^/]+)$/.exec(p.path);
  if (p.req.method === "POST" && signMatch) {
    return handleSign(p, signMatch[1]);
  }
  return send(p.res, 404, "Not Found");
}

async function handleSign(p: RouteParams, requestedKey: string): Promise<void> {
  if (requestedKey.toLowerCase() !== p.listedKey.toLowerCase()) {
    return send(p.res, 404, "Public Key not found");
  }
  const data = parseSignBody(await readBody(p.req));
  if (data === undefined) {
    return send(p.res, 400, "Bad Request");
  }
  const signingKey = p.fault === "wrong-key" ? WRONG_KEY : p.key;
  const sig = signingKey.sign(keccak256(data)).serialized;
  const body = p.fault === "low-v" ? sig.slice(0, -2) + (sig.endsWith("1b") ? "00" : "01") : sig;
  return send(p.res, 200, body);
}

function parseSignBody(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === "object" && parsed !== null && "data" in parsed) {
      const data = (parsed as { data: unknown }).data;
      return typeof data === "string" && isHexString(data, true) ? data : undefined;
    }
  } catch {
    // fall through: malformed JSON is a 400 like any other bad body
  }
  return undefined;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: string, contentType = "text/plain; charset=utf-8"): void {
  res.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

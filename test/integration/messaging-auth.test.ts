import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Wallet, verifyMessage } from "ethers";
import type { AuthServer } from "../../services/messaging-auth/app";
import {
  AUTH_MESSAGE_PREFIX,
  MessagingAuthError,
  fetchMessagingToken,
  type MessagingAuthSigner,
} from "../../shared/messaging";
import { startAuthServer } from "../harness/auth-server";
import { captureLogs } from "../harness/logs";

function walletSigner(wallet = Wallet.createRandom()): MessagingAuthSigner & { address: string } {
  return { address: wallet.address, getAddress: async () => wallet.address, signMessage: (m) => wallet.signMessage(m) };
}

async function authError(promise: Promise<unknown>): Promise<MessagingAuthError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(MessagingAuthError);
    return err as MessagingAuthError;
  }
  throw new Error("expected the auth flow to fail");
}

/** A throw-away HTTP server answering with `handler`, for the body formats and failures the real server never produces. */
async function scriptedAuthServer(
  handler: (method: string, url: string, body: string) => { status: number; body: string } | undefined,
): Promise<{ url: string; server: Server; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push(`${req.method ?? ""} ${req.url ?? ""} ${body}`);
      const answer = handler(req.method ?? "", req.url ?? "", body);
      if (answer) {
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(answer.body);
      } // else: never answer
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, seen };
}

describe("messaging auth: client (shared/messaging/auth-client) against the local auth service", () => {
  let auth: AuthServer;
  const logs = captureLogs("messaging-auth");

  beforeAll(async () => {
    auth = await startAuthServer(logs.logger);
  });
  afterAll(async () => {
    await auth.close();
  });

  it("gets a nonce, signs prefix + nonce, and receives a token the server maps to the checksummed address", async () => {
    const signer = walletSigner();
    const before = auth.stats();
    const token = await fetchMessagingToken({ authUrl: `${auth.url}/`, signer });
    expect(auth.verifyToken(token)).toBe(signer.address);
    expect(auth.stats()).toEqual({
      nonceRequests: before.nonceRequests + 1,
      tokensIssued: before.tokensIssued + 1,
      verificationFailures: before.verificationFailures,
    });
    // The token is a secret: it never lands in the server's logs.
    expect(JSON.stringify(logs.lines())).not.toContain(token);
    expect(logs.find("messaging-auth.token", "token issued")).toContainEqual(
      expect.objectContaining({ address: signer.address }),
    );
  });

  it("answers the nonce as plain text: 0x + 32 random bytes, fresh on every request", async () => {
    const address = Wallet.createRandom().address;
    const first = await fetch(`${auth.url}/auth/${address}`);
    const second = await fetch(`${auth.url}/auth/${address}`);
    const [a, b] = [await first.text(), await second.text()];
    expect(first.headers.get("content-type")).toContain("text/plain");
    expect(a).toMatch(/^0x[0-9a-f]{64}$/);
    expect(b).toMatch(/^0x[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });

  it("refuses a signature by another key with 401 'Verification failed, expected …' and the client names the step", async () => {
    const victim = Wallet.createRandom();
    const impostor = walletSigner();
    const lying: MessagingAuthSigner = { getAddress: async () => victim.address, signMessage: impostor.signMessage };
    const err = await authError(fetchMessagingToken({ authUrl: auth.url, signer: lying }));
    expect(err.step).toBe("token");
    expect(err.status).toBe(401);
    expect(err.message).toContain(`Verification failed, expected ${victim.address}`);
    expect(err.code).toBe("MESSAGING_AUTH_FAILED");
  });

  it("answers 500 'User hasn't requested a nonce yet' to a login without a nonce, and compares addresses case-sensitively", async () => {
    const wallet = Wallet.createRandom();
    const sig = await wallet.signMessage(`${AUTH_MESSAGE_PREFIX}0x00`);
    const res = await fetch(`${auth.url}/auth`, {
      method: "POST",
      body: JSON.stringify({ sig, signerAddress: wallet.address }),
    });
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("User hasn't requested a nonce yet");

    // A nonce asked for by the checksummed address, then a login as the lowercase address: not the same user.
    const nonce = await (await fetch(`${auth.url}/auth/${wallet.address}`)).text();
    const signature = await wallet.signMessage(AUTH_MESSAGE_PREFIX + nonce);
    const lower = await fetch(`${auth.url}/auth`, {
      method: "POST",
      body: JSON.stringify({ sig: signature, signerAddress: wallet.address.toLowerCase() }),
    });
    expect(lower.status).toBe(500);
    const exact = await fetch(`${auth.url}/auth`, {
      method: "POST",
      body: JSON.stringify({ sig: signature, signerAddress: wallet.address }),
    });
    expect(exact.status).toBe(200);
    // Nonces are single-use: replaying the same signature finds no nonce left.
    const replay = await fetch(`${auth.url}/auth`, {
      method: "POST",
      body: JSON.stringify({ sig: signature, signerAddress: wallet.address }),
    });
    expect(replay.status).toBe(500);
    expect(await replay.text()).toBe("User hasn't requested a nonce yet");
  });

  it("lets two instances sharing one signer log in concurrently", async () => {
    const signer = walletSigner();
    const tokens = await Promise.all([1, 2, 3].map(() => fetchMessagingToken({ authUrl: auth.url, signer })));
    expect(new Set(tokens).size).toBe(3);
    for (const token of tokens) expect(auth.verifyToken(token)).toBe(signer.address);
  });
});

describe("messaging auth: client against other server behaviours", () => {
  const servers: Server[] = [];
  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it("accepts JSON-string bodies for nonce and token (the SDK's axios does too), and sends the checksummed address", async () => {
    const signer = walletSigner();
    const s = await scriptedAuthServer((method) =>
      method === "GET"
        ? { status: 200, body: JSON.stringify("0xabc") }
        : { status: 200, body: JSON.stringify("tok.en.jwt") },
    );
    servers.push(s.server);
    expect(await fetchMessagingToken({ authUrl: s.url, signer })).toBe("tok.en.jwt");
    expect(s.seen[0]).toBe(`GET /auth/${signer.address} `);
    const posted = JSON.parse(s.seen[1]?.slice("POST /auth ".length) ?? "{}") as { sig: string; signerAddress: string };
    expect(posted.signerAddress).toBe(signer.address);
    expect(verifyMessage(`${AUTH_MESSAGE_PREFIX}0xabc`, posted.sig)).toBe(signer.address);
  });

  it("times out a hung auth server, naming the step", async () => {
    const s = await scriptedAuthServer(() => undefined);
    servers.push(s.server);
    const err = await authError(fetchMessagingToken({ authUrl: s.url, signer: walletSigner(), timeoutMs: 200 }));
    expect(err.step).toBe("nonce");
    expect(err.message).toContain("no answer within 200 ms");
  });

  it("refuses an empty token body and never quotes a successful body in the error", async () => {
    const s = await scriptedAuthServer((method) => ({ status: 200, body: method === "GET" ? "0x01" : "   " }));
    servers.push(s.server);
    const err = await authError(fetchMessagingToken({ authUrl: s.url, signer: walletSigner() }));
    expect(err.step).toBe("token");
    expect(err.status).toBe(200);
  });

  it("reports an unreachable auth server at the nonce step", async () => {
    const s = await scriptedAuthServer(() => undefined);
    const url = s.url;
    s.server.closeAllConnections();
    await new Promise((r) => s.server.close(r));
    const err = await authError(fetchMessagingToken({ authUrl: url, signer: walletSigner() }));
    expect(err.step).toBe("nonce");
    expect(err.status).toBeUndefined();
    expect(err.message).toMatch(/ECONNREFUSED/);
  });
});

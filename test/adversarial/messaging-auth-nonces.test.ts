import { request } from "node:http";
import { Wallet } from "ethers";
import { NONCES_PER_ADDRESS, type AuthServer } from "../../services/messaging-auth/app";
import { authMessage } from "../../shared/messaging/auth-message";
import { startAuthServer } from "../harness/auth-server";

/**
 * The local messaging auth service (network `local`) against a stranger with nothing at stake: it may ask
 * `GET /auth/<victim>` as often as it likes, from other source addresses (127.0.0.x are all this host's
 * loopback), but it never cancels the victim's pending login. Before, 8 such requests pushed the victim's
 * nonce out (8 kept per address), and the victim's signed login was refused.
 */
describe("messaging auth: another user's login cannot be cancelled", () => {
  let auth: AuthServer;

  beforeAll(async () => {
    auth = await startAuthServer();
  });
  afterAll(async () => {
    await auth.close();
  });

  /** One HTTP exchange from a chosen loopback source address (the requester the server sees). */
  function call(
    from: string,
    method: "GET" | "POST",
    path: string,
    body?: unknown,
  ): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        {
          host: "127.0.0.1",
          port: auth.port,
          localAddress: from,
          method,
          path,
          headers: payload ? { "content-type": "application/json" } : {},
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  async function login(
    from: string,
    wallet: { address: string; signMessage(message: string): Promise<string> },
    nonce: string,
  ): Promise<{ status: number; text: string }> {
    const sig = await wallet.signMessage(authMessage(nonce));
    return call(from, "POST", "/auth", { sig, signerAddress: wallet.address });
  }

  it("a flood of nonce requests for the victim's address from other requesters leaves its pending nonce valid", async () => {
    const victim = Wallet.createRandom();
    const nonce = await call("127.0.0.1", "GET", `/auth/${victim.address}`);
    expect(nonce.status).toBe(200);
    // Four strangers, each three times past the old 8-per-address window.
    const answers: number[] = [];
    for (const stranger of ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]) {
      for (let i = 0; i < 24; i += 1) {
        answers.push((await call(stranger, "GET", `/auth/${victim.address}`)).status);
      }
    }
    // Each stranger only ever replaces its own nonces, and the address's bound is never passed by eviction.
    expect(answers.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const res = await login("127.0.0.1", victim, nonce.text);
    expect(res.status).toBe(200);
    expect(auth.verifyToken(res.text)).toBe(victim.address);
  });

  it("requests from many sources for one address are refused past its bound, never served by dropping a live nonce", async () => {
    const victim = Wallet.createRandom();
    const nonce = await call("127.0.0.1", "GET", `/auth/${victim.address}`);
    let refused = 0;
    let granted = 0;
    for (let host = 10; host < 10 + NONCES_PER_ADDRESS; host += 1) {
      const res = await call(`127.0.0.${host}`, "GET", `/auth/${victim.address}`);
      if (res.status === 429) {
        refused += 1;
      } else {
        expect(res.status).toBe(200);
        granted += 1;
      }
    }
    // One slot is the victim's: the others fill the rest and the next are refused.
    expect(granted).toBe(NONCES_PER_ADDRESS - 1);
    expect(refused).toBe(1);
    expect((await login("127.0.0.1", victim, nonce.text)).status).toBe(200);
  });

  it("a requester flooding many addresses replaces only its own nonces: a login elsewhere still completes", async () => {
    const victim = Wallet.createRandom();
    const nonce = await call("127.0.0.1", "GET", `/auth/${victim.address}`);
    for (let i = 0; i < 300; i += 1) {
      expect((await call("127.0.0.99", "GET", `/auth/${Wallet.createRandom().address}`)).status).toBe(200);
    }
    expect((await login("127.0.0.1", victim, nonce.text)).status).toBe(200);
  });
});

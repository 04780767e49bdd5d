import type { Server } from "node:http";
import { request } from "node:http";
import { loadConfig } from "../../shared/config";
import { createApp } from "../../services/admin/app";
import { closeServer, listen } from "../../services/admin/listen";
import { ANVIL_MNEMONIC } from "../harness/anvil";
import { OPS_ADMIN_TOKEN } from "../integration/metrics-fixture";
import { captureLogs } from "../harness/logs";

/**
 * The admin API's body rules as docs/admin-api.md states them, against a caller who holds the token (or
 * pastes a secret in the wrong place): an error never echoes a name or value taken from the body, a
 * `__proto__` key is refused rather than silently dropped, and only uncompressed UTF-8 JSON is read (no
 * `content-encoding` at all, not even `identity`, and no other charset such as UTF-16).
 */
describe("operator surfaces: admin request bodies", () => {
  let server: Server;
  let port: number;
  const removals: unknown[] = [];

  beforeAll(async () => {
    const { config } = loadConfig(
      {
        adminToken: OPS_ADMIN_TOKEN,
        mnemonic: ANVIL_MNEMONIC,
        swapPools: [],
        chainConfig: {
          "1": { providers: ["http://127.0.0.1:9"] },
          "1337": {
            providers: ["http://127.0.0.1:9"],
            transactionManagerAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
          },
        },
      },
      {},
    );
    const app = createApp({
      config,
      logger: captureLogs().logger,
      signerAddress: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
      operations: {
        removeLiquidity: async (req) => {
          removals.push(req);
          return { transactionHash: `0x${"ab".repeat(32)}` };
        },
        cancelSender: async () => {
          throw new Error("not used");
        },
      },
    });
    server = await listen(app, "127.0.0.1", 0);
    const address = server.address();
    port = typeof address === "object" && address ? address.port : 0;
  });

  afterAll(async () => {
    await closeServer(server);
  });

  const validBody = {
    adminToken: OPS_ADMIN_TOKEN,
    chainId: "1337",
    assetId: "0x0000000000000000000000000000000000000000",
    amount: "1",
    recipientAddress: "0x000000000000000000000000000000000000dEaD",
  };

  /** A raw POST, so headers and bytes are exactly what the test says (fetch would normalise some). */
  function post(body: Buffer | string, headers: Record<string, string>): Promise<{ status: number; json: unknown }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, method: "POST", path: "/remove-liquidity", headers }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as unknown }));
      });
      req.on("error", reject);
      req.end(body);
    });
  }

  it("never echoes an unknown key's name (it may be a secret pasted as a key)", async () => {
    const secretKey = "sk_live_0123456789abcdefSECRETKEY";
    const res = await post(JSON.stringify({ ...validBody, [secretKey]: "x" }), { "content-type": "application/json" });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: "invalid_body" });
    expect(JSON.stringify(res.json)).not.toContain("SECRETKEY");
    expect(JSON.stringify(res.json)).toContain("1 field is not accepted");
  });

  it("refuses a __proto__ key instead of dropping it", async () => {
    const text = JSON.stringify(validBody).replace("{", '{"__proto__":{"amount":"999"},');
    const res = await post(text, { "content-type": "application/json" });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: "invalid_body" });
    expect(removals).toHaveLength(0);
  });

  it.each([["identity"], ["gzip"]])("refuses content-encoding: %s with 415", async (encoding) => {
    const res = await post(JSON.stringify(validBody), {
      "content-type": "application/json",
      "content-encoding": encoding,
    });
    expect(res.status).toBe(415);
    expect(res.json).toMatchObject({ error: "unsupported_media_type" });
    expect(removals).toHaveLength(0);
  });

  it.each([["utf-16"], ["UTF-16LE"], ["latin1"]])("refuses charset=%s with 415", async (charset) => {
    const encoding = charset.toLowerCase().startsWith("utf-16") ? "utf16le" : "latin1";
    const res = await post(Buffer.from(JSON.stringify(validBody), encoding), {
      "content-type": `application/json; charset=${charset}`,
    });
    expect(res.status).toBe(415);
    expect(res.json).toMatchObject({ error: "unsupported_media_type" });
    expect(removals).toHaveLength(0);
  });

  it("still takes a well-formed UTF-8 request (charset parameter or not)", async () => {
    for (const contentType of ["application/json", 'application/json; charset="UTF-8"']) {
      const res = await post(JSON.stringify(validBody), { "content-type": contentType });
      expect(res.status).toBe(200);
    }
    expect(removals).toHaveLength(2);
  });
});

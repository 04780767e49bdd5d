import type { Server } from "node:http";
import { request } from "node:http";
import { ConfigError, loadConfig } from "../../shared/config";
import { createRedactor } from "../../shared/logging/redact";
import { routerMetrics } from "../../shared/metrics/router-metrics";
import type { RouterStatus } from "../../services/admin/status";
import { createApp } from "../../services/admin/app";
import { closeServer, listen } from "../../services/admin/listen";
import { captureLogs } from "../harness/logs";
import { ANVIL_MNEMONIC } from "../harness/anvil";
import { OPS_ADMIN_TOKEN } from "../integration/metrics-fixture";

const CHAINS = {
  "1": { providers: ["http://127.0.0.1:9"] },
  "1337": {
    providers: ["http://127.0.0.1:9"],
    transactionManagerAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  },
};

/**
 * The admin token against a guesser: a short token is refused at config load (naming the key, never quoting
 * it), every secret is redacted however short, and wrong tokens are slowed down per TCP source address, so a
 * guesser runs out of answers while the admin, from another address, still gets in at once. A guess costs one
 * log line at most, throttled, and is counted in `router_admin_auth_failures_total`.
 */
describe("operator surfaces: weak tokens and guessing", () => {
  it("refuses an adminToken under 16 characters at config load, naming the key and not the token", () => {
    const load = (): unknown =>
      loadConfig({ adminToken: "fifteen-chars!!", mnemonic: ANVIL_MNEMONIC, swapPools: [], chainConfig: CHAINS }, {});
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/adminToken: must be at least 16 characters/);
    expect(load).not.toThrow(/fifteen-chars/);
    expect(() =>
      loadConfig({ adminToken: "x".repeat(16), mnemonic: ANVIL_MNEMONIC, swapPools: [], chainConfig: CHAINS }, {}),
    ).not.toThrow();
  });

  it("redacts secrets shorter than 4 characters too", () => {
    const redactor = createRedactor(["pw1", "k"]);
    const line = redactor.text("redis auth with pw1 failed; key k");
    expect(line).not.toContain("pw1");
    expect(line).not.toMatch(/\bk\b/);
  });

  describe("guessing the token over HTTP", () => {
    let server: Server;
    let port: number;
    const logs = captureLogs("admin");

    beforeAll(async () => {
      const { config } = loadConfig(
        { adminToken: OPS_ADMIN_TOKEN, mnemonic: ANVIL_MNEMONIC, swapPools: [], chainConfig: CHAINS },
        {},
      );
      const app = createApp({
        config,
        logger: logs.logger,
        signerAddress: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
        operations: {
          removeLiquidity: async () => ({ transactionHash: `0x${"ab".repeat(32)}` }),
          cancelSender: async () => {
            throw new Error("not used");
          },
        },
        status: async () => ({}) as RouterStatus,
      });
      server = await listen(app, "127.0.0.1", 0);
      const address = server.address();
      port = typeof address === "object" && address ? address.port : 0;
    });

    afterAll(async () => {
      await closeServer(server);
    });

    /** GET /status with a Bearer token, from a chosen loopback source address. */
    function status(from: string, token: string): Promise<{ status: number; ms: number }> {
      const started = Date.now();
      return new Promise((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port,
            localAddress: from,
            path: "/status",
            headers: { authorization: `Bearer ${token}` },
            agent: false,
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: Date.now() - started }));
          },
        );
        req.on("error", reject);
        req.end();
      });
    }

    async function failures(reason: string): Promise<number> {
      const metric = await routerMetrics().adminAuthFailures.get();
      return metric.values.filter((v) => v.labels.reason === reason).reduce((sum, v) => sum + v.value, 0);
    }

    it("slows a guessing source down and bounds its guesses, while the admin from another source gets in at once", async () => {
      const guesser = "127.0.0.7";
      const wrongBefore = await failures("wrong_token");
      // Five typos answer at once.
      for (let i = 0; i < 5; i += 1) {
        expect((await status(guesser, `wrong-token-${i}-0123456789`)).status).toBe(401);
      }
      // The next one is held: its 401 comes no sooner than the first delay (250 ms), a lower bound only.
      const held = await status(guesser, "wrong-token-held-0123456789");
      expect(held.status).toBe(401);
      expect(held.ms).toBeGreaterThanOrEqual(240);
      // Many guesses at once: only a few are checked (held), the rest answer 429 unchecked.
      const burst = await Promise.all(
        Array.from({ length: 20 }, (_, i) => status(guesser, `wrong-token-burst-${i}-0123456789`)),
      );
      const refusedUnchecked = burst.filter((r) => r.status === 429).length;
      expect(refusedUnchecked).toBeGreaterThanOrEqual(20 - 4);
      expect(burst.map((r) => r.status).filter((status) => status !== 401 && status !== 429)).toEqual([]);
      // The admin, from its own address, is neither refused nor made to wait behind the guesser.
      const admin = await status("127.0.0.1", OPS_ADMIN_TOKEN);
      expect(admin.status).toBe(200);
      // Counted: every wrong token checked is in the metric, and the unchecked ones as throttled.
      expect((await failures("wrong_token")) - wrongBefore).toBeGreaterThanOrEqual(6);
      expect(await failures("throttled")).toBeGreaterThanOrEqual(refusedUnchecked);
    });

    it("writes at most one log line per guessing source per 10 s, and no access line per guess", async () => {
      const guesser = "127.0.0.8";
      const linesBefore = logs.lines().length;
      for (let i = 0; i < 5; i += 1) {
        expect((await status(guesser, `another-wrong-token-${i}-0123456789`)).status).toBe(401);
      }
      const newLines = logs.lines().slice(linesBefore);
      expect(newLines.filter((l) => l.at === "admin.auth" && l.source === guesser)).toHaveLength(1);
      expect(newLines.filter((l) => l.at === "admin.request" && l.status === 401)).toHaveLength(0);
      expect(JSON.stringify(newLines)).not.toContain("another-wrong-token");
    });
  });
});

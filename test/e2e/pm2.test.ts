import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Wallet } from "ethers";
import type { AuthServer } from "../../services/messaging-auth/app";
import { waitForAuctionStatus } from "../../scripts/local/demo-swap";
import { startAuthServer } from "../harness/auth-server";
import { getFreePort } from "../harness/free-port";
import { startNats, type NatsServer } from "../harness/nats";
import { waitFor } from "../integration/submitter-fixture";
import {
  ADMIN_TOKEN,
  AMOUNT,
  RECEIVING,
  routerConfigJson,
  startE2eStack,
  stopE2eStack,
  type E2eStack,
} from "./e2e-fixture";
import { routerLiquidity, tokenBalance, userFulfill, userPrepare, waitForEvent } from "./e2e-user";

/**
 * The README's way of running the router: `npm run build && npx pm2 start ecosystem.config.js`, with the
 * project's own pm2 and a PM2_HOME of the test's own (so no daemon of the machine is touched). The admin API,
 * the auction (over a nats-server and the local messaging auth service of the test's own), one submitter and
 * one poller per chain run as PM2 apps; liquidity removal and a whole swap go through them.
 */
const ROOT = resolve(__dirname, "../..");
const PM2 = join(ROOT, "node_modules/.bin/pm2");

describe("PM2: ecosystem.config.js runs the router", () => {
  let s: E2eStack;
  let nats: NatsServer | undefined;
  let auth: AuthServer | undefined;
  let pm2Home: string;
  let configFile: string;
  let adminUrl: string;

  // Asynchronous: the auth server runs in this process and must answer the auction's login meanwhile.
  const pm2 = (...args: string[]): Promise<{ status: number | null; output: string }> => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PM2_HOME: pm2Home,
      ROUTER_CONFIG_FILE: configFile,
      ROUTER_LOG_DIR: join(pm2Home, "logs"),
    };
    delete env.ROUTER_ADMIN_TOKEN;
    delete env.ROUTER_MNEMONIC;
    delete env.REDIS_URL;
    return new Promise((resolve) => {
      execFile(
        PM2,
        args,
        { cwd: ROOT, env, encoding: "utf8", timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => {
          const status = err ? (typeof err.code === "number" ? err.code : 1) : 0;
          resolve({ status, output: `${stdout}${stderr}` });
        },
      );
    });
  };

  beforeAll(async () => {
    for (const script of ["admin", "auction", "submitter", "poller"]) {
      if (!existsSync(join(ROOT, `dist/services/${script}/main.js`))) {
        throw new Error(`dist/services/${script}/main.js is missing: run npm run build first (npm test does it)`);
      }
    }
    s = await startE2eStack();
    nats = await startNats();
    auth = await startAuthServer();
    pm2Home = mkdtempSync(join(tmpdir(), "pm2-home-"));
    const port = await getFreePort();
    adminUrl = `http://127.0.0.1:${port}`;
    configFile = join(pm2Home, "config.json");
    const config = routerConfigJson(s, `pm2-${port}`, { port });
    const chains = config.chainConfig as Record<string, Record<string, unknown>>;
    // Chain 1's oracle of the stack (the default is mainnet's address, which holds no code here).
    chains["1"] = { ...chains["1"], priceOracleAddress: s.chain1.deployment.priceOracle };
    writeFileSync(
      configFile,
      JSON.stringify({ ...config, network: "local", messagingUrl: nats.url, authUrl: auth.url }),
    );
    const started = await pm2("start", "ecosystem.config.js");
    if (started.status !== 0) {
      throw new Error(`pm2 start failed:\n${started.output}`);
    }
  }, 120_000);

  afterAll(async () => {
    if (pm2Home) {
      await pm2("kill");
      rmSync(pm2Home, { recursive: true, force: true });
    }
    await auth?.close();
    await nats?.stop();
    await stopE2eStack(s);
  });

  it("starts the admin API, the auction and one submitter and one poller per chain, all online", async () => {
    const output = (await pm2("jlist")).output;
    const list = JSON.parse(output.slice(output.indexOf("["))) as Array<{ name: string; pm2_env: { status: string } }>;
    const online = list
      .filter((app) => app.pm2_env.status === "online")
      .map((app) => app.name)
      .sort();
    expect(online).toEqual([
      "admin",
      "auction",
      "poller-1",
      "poller-1337",
      "poller-1338",
      "submitter-1",
      "submitter-1337",
      "submitter-1338",
    ]);
  });

  it("answers a status request over NATS from the auction app, and writes dated log lines per app", async () => {
    if (!nats || !auth) throw new Error("messaging not started");
    const status = await waitForAuctionStatus({ messagingUrl: nats.url, authUrl: auth.url }, 30_000);
    expect(status.signerAddress).toBe(s.router);
    expect(status.supportedChains).toEqual([1337, 1338]);
    const log = readFileSync(join(pm2Home, "logs", "auction.out.log"), "utf8");
    expect(log).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} [+-]\d{2}:\d{2}: \{/m);
  });

  it("removes liquidity through the admin API and the chain's submitter", async () => {
    const recipient = Wallet.createRandom().address;
    const before = await routerLiquidity(s, s.receiving);
    const res = await fetch(`${adminUrl}/remove-liquidity`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        adminToken: ADMIN_TOKEN,
        chainId: String(RECEIVING),
        assetId: s.receiving.deployment.token,
        amount: "12345",
        recipientAddress: recipient,
      }),
    });
    const body = (await res.json()) as { transactionHash?: string };
    expect(res.status).toBe(200);
    expect(body.transactionHash).toMatch(/^0x[0-9a-f]{64}$/);
    await waitFor("recipient paid", async () =>
      (await tokenBalance(s.receiving, recipient)) === 12345n ? true : undefined,
    );
    expect(await routerLiquidity(s, s.receiving)).toBe(before - 12345n);
  });

  it("carries a whole swap: receiver prepare, then the sender fulfill after the user's fulfill", async () => {
    const before = [await tokenBalance(s.sending, s.user.address), await tokenBalance(s.receiving, s.user.address)];
    const t = await userPrepare(s);
    const prepared = await waitForEvent(s.receiving, "prepared", t.transactionId, 30_000);
    expect(prepared.txData.amount).toBe(t.bid.amountReceived);
    await userFulfill(s, prepared.txData);
    await waitForEvent(s.sending, "fulfilled", t.transactionId, 30_000);
    expect(await tokenBalance(s.sending, s.user.address)).toBe(before[0] - AMOUNT);
    expect(await tokenBalance(s.receiving, s.user.address)).toBe(before[1] + BigInt(t.bid.amountReceived));
  });
});

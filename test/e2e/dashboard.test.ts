import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext } from "playwright-core";
import type { StackChain } from "../harness/stack";
import { getFreePort } from "../harness/free-port";
import { transferEvents } from "./e2e-user";
import { runSdkSwap, type SdkSwapParams } from "./run-sdk-swap";
import {
  RECEIVING,
  SENDING,
  assertPrerequisites,
  fundedUser,
  startRouterProcesses,
  startSdkStack,
  type SdkStack,
} from "./sdk-fixture";
import { waitFor } from "../harness/wait";
import { sampleValue } from "../harness/prometheus";

/**
 * Operating the router after a real swap (the real SDK through the router's own processes from dist/, as in
 * sdk.test.ts, plus the admin API): every process's /metrics shows the swap, every /readyz passes, and the
 * queue dashboard in a real headless Chromium (Debian's package, driven by playwright-core) refuses a visitor
 * without the token, lists every chain's queue with it, and shows job data without a secret. The screenshot
 * in docs/ comes from this run.
 */
const CHROMIUM = "/usr/bin/chromium";
/**
 * docs/dashboard.png is (re)written when missing or with UPDATE_DOCS_SCREENSHOT=1; otherwise the shot goes to a
 * temporary file, so a test run does not rewrite a tracked binary every time.
 */
const DOCS_SCREENSHOT = resolve(__dirname, "../../docs/dashboard.png");
const SCREENSHOT =
  process.env.UPDATE_DOCS_SCREENSHOT === "1" || !existsSync(DOCS_SCREENSHOT)
    ? DOCS_SCREENSHOT
    : join(tmpdir(), `dashboard-${process.pid}.png`);
const CHAIN1 = 1;
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Chromium from Debian: present, or installed with apt-get when running as root (CI); never downloaded otherwise. */
function ensureChromium(): boolean {
  if (existsSync(CHROMIUM)) {
    return true;
  }
  if (process.getuid?.() === 0 && existsSync("/usr/bin/apt-get")) {
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], {
      env,
      stdio: "ignore",
      timeout: 600_000,
    });
  }
  return existsSync(CHROMIUM);
}

/** The status a navigation ended with, or Chromium's network error when it gave up on the auth challenge. */
async function refusedNavigation(context: BrowserContext, url: string): Promise<string> {
  const page = await context.newPage();
  try {
    const res = await page.goto(url);
    return String(res?.status());
  } catch (err) {
    const match = /net::ERR_[A-Z_]+/.exec(err instanceof Error ? err.message : String(err));
    if (!match) throw err;
    return match[0];
  }
}

interface Scrape {
  readonly name: string;
  readonly text: string;
}

describe("operating the router after a real swap", () => {
  let s: SdkStack;
  let adminUrl: string;
  let adminToken: string;
  let metricsBase: number;
  let transactionId: string;

  /** The ports of shared/metrics/metrics-port.ts: chainConfig order 1, 1337, 1338. */
  const ports = (): Record<string, number> => ({
    admin: metricsBase,
    auction: metricsBase + 32,
    [`submitter-${SENDING}`]: metricsBase + (2 + 2 * 1) * 32,
    // One poller process for both swap chains: on its first chain's poller port.
    poller: metricsBase + (3 + 2 * 1) * 32,
    [`submitter-${RECEIVING}`]: metricsBase + (2 + 2 * 2) * 32,
  });
  const scrape = async (name: string): Promise<Scrape> => {
    const res = await fetch(`http://127.0.0.1:${ports()[name]}/metrics`);
    expect(res.status).toBe(200);
    return { name, text: await res.text() };
  };

  beforeAll(async () => {
    assertPrerequisites([
      "messaging-auth/main.js",
      "auction/main.js",
      "submitter/main.js",
      "poller/main.js",
      "admin/main.js",
    ]);
    s = await startSdkStack();
    // Own ports for this run: metrics (a base with room for every slot) and the admin API.
    metricsBase = 20_000 + ((await getFreePort()) % 20_000);
    const adminPort = await getFreePort();
    const config = JSON.parse(readFileSync(s.configFile, "utf8")) as Record<string, unknown>;
    adminToken = String(config.adminToken);
    writeFileSync(s.configFile, JSON.stringify({ ...config, metricsPort: metricsBase, port: adminPort }));
    adminUrl = `http://127.0.0.1:${adminPort}`;
    // The admin and the user's funding need none of the other processes: they start beside them.
    s.spawn("admin", "admin/main.js");
    const [user] = await Promise.all([fundedUser(s), startRouterProcesses(s)]);
    await waitFor("admin API", async () =>
      (await fetch(`${adminUrl}/ping`).catch(() => undefined))?.ok ? true : undefined,
    );

    const chain = (c: StackChain): SdkSwapParams["chains"][number] => ({
      rpcUrl: c.anvil.url,
      transactionManager: c.deployment.transactionManager,
      subgraph: s.subgraphs.get(c.chainId)?.url ?? "",
    });
    const r = await runSdkSwap(
      {
        mode: "user",
        natsUrl: s.stack.nats?.url ?? "",
        authUrl: s.authUrl,
        sendingChainId: SENDING,
        receivingChainId: RECEIVING,
        sendingAssetId: s.sending.deployment.token,
        receivingAssetId: s.receiving.deployment.token,
        amount: (10n * 10n ** 18n).toString(),
        chains: { [SENDING]: chain(s.sending), [RECEIVING]: chain(s.receiving) },
        userPrivateKey: user.privateKey,
        stepTimeoutMs: 12_000,
      },
      20_000,
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${s.outputTails()}`);
    });
    transactionId = r.quote.bid.transactionId;
    await waitFor(
      "the router's claim",
      async () => (await transferEvents(s.sending, "fulfilled", transactionId))[0],
      15_000,
    );
  }, 120_000);

  afterAll(async () => {
    await s?.stop();
  });

  it("every process is ready and serves /metrics", async () => {
    for (const [name, port] of Object.entries(ports())) {
      const ready = await waitFor(`${name} ready`, async () => {
        const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
        return res?.status === 200 ? res : undefined;
      });
      expect(ready.status).toBe(200);
      expect((await scrape(name)).text).toMatch(/^process_start_time_seconds\{/m);
    }
  });

  it("the auction counted the request and the bid, its latency and the time of the bid", async () => {
    const { text } = await scrape("auction");
    expect(sampleValue(text, "router_auction_requests_total")).toBeGreaterThanOrEqual(1);
    expect(sampleValue(text, "router_bids_sent_total", { chain: String(RECEIVING) })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(text, "router_bid_duration_seconds_count", { result: "bid" })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(text, "router_last_bid_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 300);
  });

  it("the submitters counted their transactions and jobs, and the swap", async () => {
    const receiving = (await scrape(`submitter-${RECEIVING}`)).text;
    expect(
      sampleValue(receiving, "router_tx_sent_total", { chain: String(RECEIVING), operation: "prepare-receiver" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(receiving, "router_tx_confirmed_total", { chain: String(RECEIVING), operation: "prepare-receiver" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(receiving, "router_job_duration_seconds_count", { queue: `tx-${RECEIVING}`, result: "completed" }),
    ).toBeGreaterThanOrEqual(1);
    const sending = await waitFor("the claim counted", async () => {
      const { text } = await scrape(`submitter-${SENDING}`);
      return (sampleValue(text, "router_swaps_completed_total", { chain: String(SENDING) }) ?? 0) >= 1
        ? text
        : undefined;
    });
    expect(
      sampleValue(sending, "router_tx_confirmed_total", { chain: String(SENDING), operation: "fulfill-sender" }),
    ).toBeGreaterThanOrEqual(1);
  });

  it("the poller exports liquidity, reservations, gas, heads and queue depth of each of its chains", async () => {
    const { text } = await scrape("poller");
    // Both chains' series on the one endpoint (the receiving chain's are checked in detail below).
    expect(sampleValue(text, "router_chain_head_block", { chain: String(SENDING) })).toBeGreaterThan(0);
    const labels = { chain: String(RECEIVING), asset: s.receiving.deployment.token.toLowerCase() };
    expect(sampleValue(text, "router_liquidity", labels)).toBeGreaterThan(0);
    expect(sampleValue(text, "router_liquidity_reserved", labels)).toBeGreaterThanOrEqual(0);
    expect(sampleValue(text, "router_gas_balance_wei", { chain: String(RECEIVING) })).toBeGreaterThan(0);
    expect(sampleValue(text, "router_min_gas_wei", { chain: String(RECEIVING) })).toBeGreaterThan(0);
    expect(sampleValue(text, "router_chain_head_block", { chain: String(RECEIVING) })).toBeGreaterThan(0);
    expect(
      sampleValue(text, "router_queue_jobs", { queue: `tx-${RECEIVING}`, state: "completed" }),
    ).toBeGreaterThanOrEqual(1);
    expect(sampleValue(text, "router_tx_pending", { chain: String(RECEIVING) })).toBe(0);
    expect(text).toMatch(/^router_provider_head_lag_blocks\{chain="1338",provider="[^"]+"/m);
  });

  it("the admin exports a live heartbeat for every process, and GET /status shows them", async () => {
    const { text } = await scrape("admin");
    for (const id of [
      "admin-0",
      "auction-0",
      `submitter-${SENDING}-0`,
      `submitter-${RECEIVING}-0`,
      `poller-${SENDING}+${RECEIVING}-0`,
    ]) {
      expect(sampleValue(text, "router_process_up", { process: id })).toBe(1);
    }
    const status = (await (
      await fetch(`${adminUrl}/status`, { headers: { authorization: `Bearer ${adminToken}` } })
    ).json()) as {
      chains: Array<{
        chainId: number;
        head?: number;
        queue: Record<string, number>;
        assets: Array<{ liquidity?: string }>;
      }>;
    };
    const receiving = status.chains.find((c) => c.chainId === RECEIVING);
    expect(receiving?.head).toBeGreaterThan(0);
    expect(receiving?.queue.completed).toBeGreaterThanOrEqual(1);
    expect(BigInt(receiving?.assets[0]?.liquidity ?? "0")).toBeGreaterThan(0n);
  });

  describe("the queue dashboard in a headless browser", () => {
    let browser: Browser | undefined;
    let context: BrowserContext | undefined;
    let browserNote: string | undefined;

    // One browser for the block, a fresh context (cookies, credentials, cache of its own) per visitor: a launch
    // costs about a second, a context a few hundred ms.
    const open = async (credentials?: { username: string; password: string }): Promise<BrowserContext> => {
      if (!browser) throw new Error("browser not started");
      return browser.newContext({ httpCredentials: credentials, viewport: { width: 1400, height: 900 } });
    };

    beforeAll(() => {
      if (!ensureChromium()) {
        browserNote = `NOTE: ${CHROMIUM} is absent and could not be installed (apt-get install chromium needs root): browser checks not run`;
        console.warn(browserNote);
      }
    });

    beforeAll(async () => {
      if (browserNote) return;
      const { chromium } = await import("playwright-core");
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
    });

    afterEach(async () => {
      await context?.close();
      context = undefined;
    });

    afterAll(async () => {
      await browser?.close();
    });

    it("refuses a visitor without the token, and one with a wrong token", async () => {
      if (browserNote) return console.warn(browserNote);
      context = await open();
      // Headless Chromium cannot show the Basic-auth prompt: the 401 challenge ends the navigation with an error.
      const refused = await refusedNavigation(context, `${adminUrl}/admin/queues`);
      expect(refused).toMatch(/^(401|net::ERR_INVALID_AUTH_CREDENTIALS)$/);
      const direct = await context.request.get(`${adminUrl}/admin/queues/api/queues`);
      expect(direct.status()).toBe(401);
      expect(direct.headers()["www-authenticate"]).toMatch(/^Basic realm=/);
      expect(await direct.text()).not.toContain("tx-1338");
      await context.close();
      context = await open({ username: "sre", password: "not-the-token" });
      expect(await refusedNavigation(context, `${adminUrl}/admin/queues`)).toMatch(
        /^(401|net::ERR_INVALID_AUTH_CREDENTIALS)$/,
      );
    });

    it("lists every queue of every chain with the token, shows job data without a secret, and refuses writes", async () => {
      if (browserNote) return console.warn(browserNote);
      context = await open({ username: "sre", password: adminToken });
      const page = await context.newPage();
      const res = await page.goto(`${adminUrl}/admin/queues`);
      expect(res?.status()).toBe(200);
      for (const chainId of [CHAIN1, SENDING, RECEIVING]) {
        await page.getByText(`tx-${chainId}`, { exact: true }).first().waitFor({ timeout: 15_000 });
      }
      await page.goto(`${adminUrl}/admin/queues/queue/tx-${RECEIVING}?status=completed`);
      await page.getByText("prepare-receiver").first().waitFor({ timeout: 15_000 });
      // The job card's data tab: the transfer's id is in it, no secret is anywhere on the page.
      await page.getByText(transactionId.slice(0, 20)).first().waitFor({ timeout: 15_000 });
      const html = await page.content();
      const config = JSON.parse(readFileSync(s.configFile, "utf8")) as { adminToken: string; mnemonic: string };
      expect(html).not.toContain(config.adminToken);
      expect(html).not.toContain(config.mnemonic.split(" ").slice(0, 4).join(" "));
      // Read-only by default: bull-board's write endpoints answer 405, even from the page's own origin.
      const put = await page.evaluate(
        async (url) => (await fetch(url, { method: "PUT" })).status,
        `${adminUrl}/admin/queues/api/queues/tx-${RECEIVING}/retry/failed`,
      );
      expect(put).toBe(405);
      mkdirSync(resolve(SCREENSHOT, ".."), { recursive: true });
      await page.goto(`${adminUrl}/admin/queues`, { waitUntil: "networkidle" });
      await page.getByText(`tx-${RECEIVING}`, { exact: true }).first().waitFor();
      await page
        .getByText("Loading...")
        .waitFor({ state: "detached", timeout: 15_000 })
        .catch(() => undefined);
      await page.waitForLoadState("networkidle");
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(existsSync(SCREENSHOT)).toBe(true);
      if (SCREENSHOT !== DOCS_SCREENSHOT) rmSync(SCREENSHOT, { force: true });
    }, 60_000);

    it("loads nothing from outside the admin's host: every request the page makes goes to the admin", async () => {
      if (browserNote) return console.warn(browserNote);
      context = await open({ username: "sre", password: adminToken });
      const requested: string[] = [];
      context.on("request", (request) => requested.push(request.url()));
      const page = await context.newPage();
      const res = await page.goto(`${adminUrl}/admin/queues`, { waitUntil: "networkidle" });
      expect(res?.headers()["content-security-policy"]).toMatch(/^default-src 'self'/);
      expect(await res?.text()).not.toContain("fonts.googleapis.com");
      await page.getByText(`tx-${RECEIVING}`, { exact: true }).first().waitFor({ timeout: 15_000 });
      await page.goto(`${adminUrl}/admin/queues/queue/tx-${RECEIVING}?status=completed`, { waitUntil: "networkidle" });
      await page.getByText("prepare-receiver").first().waitFor({ timeout: 15_000 });
      await page.waitForLoadState("networkidle");
      const host = new URL(adminUrl).host;
      // The page, its scripts, styles, icons and API calls: more than the document alone, all on the admin's host.
      expect(requested.length).toBeGreaterThan(5);
      expect(requested.filter((url) => !url.startsWith("data:") && new URL(url).host !== host)).toEqual([]);
    }, 60_000);
  });
});

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { BrowserContext } from "playwright-core";
import { parseEther } from "ethers";
import { Redis } from "ioredis";
import { OPERATOR_CSP } from "../../services/admin/routes/operator-page";
import { startAdmin } from "../../services/admin/start-admin";
import type { RouterConfig } from "../../shared/config/types";
import type { PnlReport } from "../../shared/ledger/pnl-reads";
import { createLogger } from "../../shared/logging/create-logger";
import type { SwapView } from "../../shared/protocol/ledger";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { readBigInt } from "../harness/deploy";
import { getFreePort } from "../harness/free-port";
import { liveChildPids } from "../harness/child-process";
import { usePostgres } from "../harness/postgres";
import { RECEIVING, SENDING, startLifecycleStack, type LifecycleStack } from "../integration/lifecycle-fixture";
import { seedBookedSwaps, type BookedSwaps } from "../integration/pnl-fixture";

/**
 * The operator page (GET /operator) in a real headless Chromium (Debian's, driven by playwright-core) over the
 * real admin (startAdmin) after real swaps on two anvil chains booked by the real ledger process: the
 * liquidity bars, the profit-and-loss chart, the latest swaps and the alerts show the API's figures; every
 * request the page makes goes to the admin's own origin; the CSP lets nothing else run. docs/operator-page.png
 * comes from this run.
 */
const CHROMIUM = "/usr/bin/chromium";
const DOCS_SCREENSHOT = resolve(__dirname, "../../docs/operator-page.png");
const SCREENSHOT =
  process.env.UPDATE_DOCS_SCREENSHOT === "1" || !existsSync(DOCS_SCREENSHOT)
    ? DOCS_SCREENSHOT
    : join(tmpdir(), `operator-page-${process.pid}.png`);
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
const DAY = 86_400;
/** 20 TEST: chain SENDING holds 10 after the swap, under it: critical. */
const FLOOR_SENDING = parseEther("20");

function ensureChromium(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.getuid?.() === 0 && existsSync("/usr/bin/apt-get")) {
    spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      stdio: "ignore",
      timeout: 600_000,
    });
  }
  return existsSync(CHROMIUM);
}

/** The page's USD format (OPERATOR_JS `usd`): cents, or four decimals under a dollar. */
function usd(n: number | null): string {
  if (n === null) return "unpriced";
  const abs = Math.abs(n);
  const digits = abs !== 0 && abs < 1 ? 4 : 2;
  return `${n < 0 ? "-$" : "$"}${abs.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

describe("the operator page in a headless browser, after real swaps booked by the ledger", () => {
  const pg = usePostgres();
  let s: LifecycleStack;
  let seed: BookedSwaps;
  let config: RouterConfig;
  let admin: { stop(): Promise<void> } | undefined;
  let adminUrl: string;
  let context: BrowserContext | undefined;
  let profile: string | undefined;
  let browserNote: string | undefined;

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${adminUrl}${path}`, { headers: { authorization: `Bearer ${config.adminToken}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };
  const open = async (credentials?: { username: string; password: string }): Promise<BrowserContext> => {
    const { chromium } = await import("playwright-core");
    profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
    return chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      httpCredentials: credentials,
      viewport: { width: 1400, height: 1000 },
    });
  };

  beforeAll(async () => {
    if (!ensureChromium()) {
      browserNote = `NOTE: ${CHROMIUM} is absent and could not be installed (apt-get install chromium needs root): browser checks not run`;
      console.warn(browserNote);
    }
    s = await startLifecycleStack();
    // The claim at once: the page's chart ends with the current UTC day, and the chains' clocks are the wall's.
    seed = await seedBookedSwaps(s, pg, "operator_page", { claimDelaySec: 0 });
    const [pool] = seed.config.swapPools;
    config = {
      ...seed.config,
      host: "127.0.0.1",
      port: await getFreePort(),
      swapPools: [
        {
          ...pool,
          inventory: {
            [String(SENDING)]: { targetPercent: 50, minimumPercent: 35, floor: FLOOR_SENDING.toString() },
            [String(RECEIVING)]: { targetPercent: 50, minimumPercent: 35, floor: "0" },
          },
        },
      ],
    };
    adminUrl = `http://127.0.0.1:${config.port}`;
    // The router's balances reach Redis as a poller writes them: routerBalances read on chain.
    const redis = new Redis(s.redisUrl);
    try {
      const balances = createBalanceStore(redis, config.redisPrefix);
      for (const chain of [s.sending, s.receiving]) {
        const amount = await readBigInt(chain.deployment.contracts.transactionManager, "routerBalances", [
          s.signerAddress,
          chain.deployment.token,
        ]);
        await balances.setRouterBalance(chain.chainId, chain.deployment.token, amount);
        // The receiving chain's signer under minGas: GET /status says gasLow, the page alerts.
        await balances.setGasBalance(chain.chainId, chain === s.receiving ? 1n : parseEther("10"));
      }
    } finally {
      redis.disconnect();
    }
    admin = await startAdmin({ config, logger: createLogger({ level: "silent", service: "admin" }), env: {} });
  }, 300_000);

  afterEach(async () => {
    await context?.close();
    context = undefined;
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  afterAll(async () => {
    await admin?.stop();
    await seed?.pool.end();
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("refuses a visitor without the token; serves the page with a strict CSP and no secret in it", async () => {
    const bare = await fetch(`${adminUrl}/operator`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    const res = await fetch(`${adminUrl}/operator`, { headers: { authorization: `Bearer ${config.adminToken}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(OPERATOR_CSP);
    expect(OPERATOR_CSP).toMatch(/^default-src 'self'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-/);
    const html = await res.text();
    expect(html).not.toContain(config.adminToken);
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/); // nothing loaded from anywhere
    if (browserNote) return console.warn(browserNote);
    context = await open();
    const page = await context.newPage();
    let refused: string;
    try {
      refused = String((await page.goto(`${adminUrl}/operator`))?.status());
    } catch (err) {
      refused = /net::ERR_[A-Z_]+/.exec(String(err))?.[0] ?? String(err);
    }
    expect(refused).toMatch(/^(401|net::ERR_INVALID_AUTH_CREDENTIALS)$/);
  });

  it("shows the bars, the chart, the latest swaps and the alerts with the API's figures; every request to its own origin", async () => {
    if (browserNote) return console.warn(browserNote);
    context = await open({ username: "operator", password: config.adminToken });
    const requests: string[] = [];
    context.on("request", (request) => requests.push(request.url()));
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (msg) => {
      if (msg.type() === "error" && !/favicon/.test(msg.location().url)) problems.push(msg.text());
    });
    page.on("pageerror", (err) => problems.push(String(err)));
    expect((await page.goto(`${adminUrl}/operator`))?.status()).toBe(200);
    await page.waitForSelector("body[data-loaded=true]", { timeout: 20_000 });

    // Liquidity bars: each chain's share and state as GET /inventory has them, the fill as wide as the share.
    const inventory = await api<{
      pools: Array<{ chains: Array<{ chainId: number; sharePercent: number; state: string }> }>;
    }>("/inventory");
    const chains = inventory.pools[0].chains;
    expect(chains.map((c) => [c.chainId, c.state])).toEqual([
      [SENDING, "critical"],
      [RECEIVING, "ok"],
    ]);
    for (const chain of chains) {
      const row = page.locator(`#liquidity .chain-row[data-chain="${chain.chainId}"]`);
      expect(await row.getAttribute("data-share")).toBe(String(chain.sharePercent));
      expect(await row.getAttribute("data-state")).toBe(chain.state);
      const width = await row
        .locator(".fill")
        .evaluate((el) => (el as unknown as { style: { width: string } }).style.width);
      expect(parseFloat(width)).toBeCloseTo(chain.sharePercent, 6);
      await expect(row.locator(".figures").textContent()).resolves.toContain(`${chain.sharePercent.toFixed(1)} %`);
    }

    // The chart: 30 daily bars ending with today (UTC), each the net of GET /pnl's bucket.
    const to = (Math.floor(Date.now() / 1000 / DAY) + 1) * DAY;
    const pnl = await api<PnlReport>(`/pnl?from=${to - 30 * DAY}&to=${to}&step=${DAY}`);
    expect(pnl.swaps).toEqual({ claimed: 1, cancelled: 1 });
    const bars = await page
      .locator("#pnl-chart rect")
      .evaluateAll((rects) =>
        rects.map((r) => [Number(r.getAttribute("data-start")), Number(r.getAttribute("data-net"))]),
      );
    expect(bars).toEqual((pnl.series ?? []).map((b) => [b.start, b.usd.net]));
    expect(bars).toHaveLength(30);
    expect(bars[29][1]).toBeCloseTo(pnl.usd.net, 12); // everything happened today
    expect(bars[29][1]).not.toBe(0);
    const netHeight = Number(await page.locator("#pnl-chart rect").nth(29).getAttribute("height"));
    expect(netHeight).toBeGreaterThan(50); // the largest bar spans the half-height scale
    await expect(page.locator('#pnl-totals [data-figure="net"] b').textContent()).resolves.toBe(usd(pnl.usd.net));
    await expect(page.locator('#pnl-totals [data-figure="relayer fees"] b').textContent()).resolves.toBe(usd(0.5));

    // The latest swaps with their net, as GET /ledger lists them.
    const latest = await api<{ swaps: SwapView[] }>("/ledger?limit=20");
    // Both swaps' latest events may share a second here (no chain time passed): the order is then by id.
    expect(latest.swaps.map((v) => v.transactionId).sort()).toEqual([seed.cancelledId, seed.claimedId].sort());
    const rows = await page
      .locator("#swaps tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute("data-id"), tr.querySelector("td.net")?.textContent]));
    expect(rows).toEqual(latest.swaps.map((v) => [v.transactionId, usd(v.usd.net)]));

    // The alerts: the critical ones first (the inventory, the gas GET /status shows low), then the unpriced figure.
    const alerts = await page
      .locator("#alerts li")
      .evaluateAll((lis) => lis.map((li) => [li.getAttribute("data-kind"), li.className, li.textContent]));
    expect(alerts).toEqual([
      [
        "inventory",
        "critical",
        expect.stringMatching(new RegExp(`^Liquidity critical on chain ${SENDING} \\(TEST\\)`)),
      ],
      ["gas", "critical", `Gas low on chain ${RECEIVING}: below minGas`],
      ["unpriced", "warning", "1 figure(s) without a USD price yet: the profit and loss sums are partial"],
    ]);

    // Nothing left the admin's origin, nothing was blocked, nothing threw.
    const origins = new Set(requests.map((url) => new URL(url).origin));
    expect([...origins]).toEqual([adminUrl]);
    const paths = requests.map((url) => new URL(url).pathname);
    expect(paths).toEqual(expect.arrayContaining(["/operator", "/inventory", "/status", "/pnl", "/ledger"]));
    expect(problems).toEqual([]);
    expect(await page.content()).not.toContain(config.adminToken);

    // The hourly view: 48 bars from the same API.
    await page.getByRole("button", { name: "48 hours, hourly" }).click();
    // (No waitForFunction: a string predicate is eval, which the page's CSP refuses, as it should.)
    await page.locator('#pnl button[aria-pressed="true"]', { hasText: "48 hours" }).waitFor();
    expect(await page.locator("#pnl-chart rect").count()).toBe(48);

    await page.getByRole("button", { name: "30 days, daily" }).click();
    await page.locator('#pnl button[aria-pressed="true"]', { hasText: "30 days" }).waitFor();
    expect(await page.locator("#pnl-chart rect").count()).toBe(30);
    mkdirSync(resolve(SCREENSHOT, ".."), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(existsSync(SCREENSHOT)).toBe(true);
  });
});

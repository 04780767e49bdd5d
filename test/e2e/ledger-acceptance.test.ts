import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Wallet, ZeroAddress, getAddress, parseEther } from "ethers";
import { runRebuild } from "../../scripts/ledger";
import { waitForAuctionStatus } from "../../scripts/local/demo-swap";
import { reconcileOnce, type ReconcilerDeps } from "../../services/ledger/reconciler";
import { createChainProvider, type ChainProvider } from "../../shared/chain/chain-provider";
import { scanRouterEvents } from "../../shared/chain/router-logs";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { createLedgerPool, type LedgerPool } from "../../shared/ledger/database";
import type { PnlReport } from "../../shared/ledger/pnl-reads";
import { createLogger } from "../../shared/logging/create-logger";
import { LEDGER_METRICS_SLOT, PORTS_PER_SLOT } from "../../shared/metrics/metrics-port";
import type { SwapView } from "../../shared/protocol/ledger";
import { getFreePort } from "../harness/free-port";
import { mintToken } from "../harness/deploy";
import { startPostgres, type PostgresServer } from "../harness/postgres";
import type { StackChain } from "../harness/stack";
import { waitFor } from "../harness/wait";
import { transferEvents } from "./e2e-user";
import { runSdkSwap, type SdkSwapParams, type SdkSwapResult } from "./run-sdk-swap";
import {
  CHAIN1,
  RECEIVING,
  SENDING,
  assertPrerequisites,
  fundedUser,
  routerLiquidity,
  startAuthProcess,
  startSdkStack,
  type SdkStack,
} from "./sdk-fixture";

/**
 * The acceptance test of the operator's money, end to end. The whole ecosystem under PM2 (ecosystem.config.js
 * with a `ledger` section, so the ledger app runs; every process at its shipped defaults), a PostgreSQL cluster
 * of the test's own, anvil 1/1337/1338 with the NXTP contracts. Real @connext/nxtp-sdk swaps (TEST relayed with
 * submitter-1338 SIGKILLed while its receiving prepare is in the mempool; native ETH with the poller SIGKILLed
 * at the quote), then remove-liquidity, add-liquidity-for and migrate-liquidity through the admin API. The books
 * must then equal the chain: every transaction the signer mined booked once to the wei of its receipt, every
 * event of the router once, each swap's fee what came in minus what went out, GET /pnl the sum of the rest,
 * no reconciliation drift, the ledger's wei counter the receipts' sum, and a rebuild from block 0 the live totals.
 *
 * The reconciliation's timer is 10 minutes by default, so the ledger process never runs it within the test: the
 * test runs the ledger's own reconcileOnce (the baseline before the first swap, the check at the end), which
 * stores its lines where GET /status reads them.
 */
const ROOT = resolve(__dirname, "../..");
const PM2 = join(ROOT, "node_modules/.bin/pm2");
const ADMIN_TOKEN = "sdk-e2e-admin-token-0123456789abcdef";
const AMOUNT = parseEther("10");
const NATIVE_AMOUNT = parseEther("1");
const RELAYER_FEE = parseEther("0.001");
const STEP_TIMEOUT_MS = 15_000;
const SWAP_TIMEOUT_MS = 30_000;
const PM2_CALL_TIMEOUT_MS = 30_000;
const APPS = [
  "admin",
  "auction",
  "ledger",
  ...[SENDING, RECEIVING].map((id) => `submitter-${id}`),
  // One poller process for both swap chains (ecosystem.config.js's default).
  "poller",
];
const LOG_TAIL_CHARS = 3_000;

interface Pm2Entry {
  readonly name: string;
  readonly pid: number;
  readonly pm2_env: { readonly status: string; readonly restart_time: number };
}

interface TxRow {
  chain_id: number;
  hash: string;
  kind: string;
  gas_used: string;
  effective_gas_price: string;
  l1_fee_wei: string;
  cost_wei: string;
  value_wei: string | null;
  cost_usd: string | null;
  transaction_id: string | null;
}

interface RawReceipt {
  readonly from: string;
  readonly gasUsed: string;
  readonly effectiveGasPrice: string;
  readonly l1Fee?: string;
}

describe("acceptance: the operator's money, booked by the PM2-run ledger from real SDK swaps and admin liquidity", () => {
  let pg: PostgresServer | undefined;
  let s: SdkStack | undefined;
  let pm2Home: string | undefined;
  let logDir: string;
  let config: RouterConfig;
  let pool: LedgerPool;
  let baseUrl: string;
  let ledgerMetricsUrl: string;
  const providers = new Map<number, ChainProvider>();
  const silent = createLogger({ level: "silent", service: "test" });
  /** The swaps of the test, by transaction id. */
  const swaps: SdkSwapResult[] = [];

  const stack = (): SdkStack => {
    if (!s) throw new Error("stack not started");
    return s;
  };
  const chainOf = (chainId: number): StackChain => stack().stack.chain(chainId);
  const providerFor = (chainId: number): ChainProvider => {
    let p = providers.get(chainId);
    if (!p) {
      p = createChainProvider({ chainId, urls: [chainOf(chainId).anvil.url], logger: silent });
      providers.set(chainId, p);
    }
    return p;
  };
  const reconcileDeps = (): ReconcilerDeps => ({
    config,
    pool,
    providerFor,
    signer: stack().router.toLowerCase(),
    routerAddress: stack().router.toLowerCase(),
    logger: silent,
  });

  const pm2 = (...args: string[]): Promise<{ status: number; output: string }> => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PM2_HOME: pm2Home,
      ROUTER_CONFIG_FILE: s?.configFile,
      ROUTER_LOG_DIR: logDir,
      SUBMITTER_STANDBYS: "0",
      AUCTION_INSTANCES: "1",
    };
    for (const secret of ["ROUTER_ADMIN_TOKEN", "ROUTER_MNEMONIC", "REDIS_URL", "SUBMITTER_INSTANCES"]) {
      delete env[secret];
    }
    return new Promise((done) => {
      execFile(
        PM2,
        args,
        { cwd: ROOT, env, encoding: "utf8", timeout: PM2_CALL_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => {
          done({ status: err ? (typeof err.code === "number" ? err.code : 1) : 0, output: `${stdout}${stderr}` });
        },
      );
    });
  };
  const jlist = async (): Promise<Pm2Entry[]> => {
    const { status, output } = await pm2("jlist");
    const start = output.indexOf("[");
    if (status !== 0 || start < 0) throw new Error(`pm2 jlist failed (${status}): ${output.slice(-500)}`);
    return JSON.parse(output.slice(start)) as Pm2Entry[];
  };
  const app = async (name: string): Promise<Pm2Entry> => {
    const found = (await jlist()).find((a) => a.name === name);
    if (!found) throw new Error(`no PM2 app ${name}`);
    return found;
  };
  const logTails = (names: readonly string[]): string =>
    names
      .flatMap((name) => [`${name}.out.log`, `${name}.error.log`])
      .map((file) => {
        const path = join(logDir, file);
        const text = existsSync(path) ? readFileSync(path, "utf8").slice(-LOG_TAIL_CHARS) : "(missing)";
        return `--- ${file} (tail) ---\n${text}`;
      })
      .join("\n");
  const failWith =
    (names: readonly string[]) =>
    (err: unknown): never => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${logTails(names)}`);
    };
  /** SIGKILLs the app's process and resolves once PM2 has it online again under a new pid. */
  const killAndAwaitRestart = async (name: string): Promise<Pm2Entry> => {
    const victim = await app(name);
    expect(victim.pm2_env.status).toBe("online");
    process.kill(victim.pid, "SIGKILL");
    const restarted = await waitFor(
      `PM2 restarting ${name} (pid ${victim.pid} SIGKILLed) and it reporting ready`,
      async () => {
        const now = await app(name);
        return now.pid !== victim.pid && now.pid > 0 && now.pm2_env.status === "online" ? now : undefined;
      },
      20_000,
    );
    expect(restarted.pm2_env.restart_time).toBe(victim.pm2_env.restart_time + 1);
    return restarted;
  };

  const get = async <T>(path: string): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    return { status: res.status, body: (await res.json()) as T };
  };
  const post = async (
    path: string,
    body: Record<string, unknown>,
    requestId = randomUUID(),
  ): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": requestId },
      body: JSON.stringify({ adminToken: ADMIN_TOKEN, ...body }),
    });
    return { status: res.status, body: await res.json() };
  };
  const minedReceipt = (chainId: number, hash: string) =>
    waitFor(`${hash} mined on ${chainId}`, () => chainOf(chainId).provider.getTransactionReceipt(hash), 30_000);

  /** Every transaction the router's signer mined on the chain, read block by block from block 0. */
  const signerTxs = async (chainId: number): Promise<string[]> => {
    const provider = chainOf(chainId).provider;
    const head = await provider.getBlockNumber();
    const hashes: string[] = [];
    for (let n = 0; n <= head; n += 1) {
      const block = await provider.getBlock(n, true);
      for (const tx of block?.prefetchedTransactions ?? []) {
        if (getAddress(tx.from) === stack().router) hashes.push(tx.hash.toLowerCase());
      }
    }
    return hashes.sort();
  };
  const bookedTxs = async (chainId: number): Promise<string[]> =>
    (
      await pool.query<{ hash: string }>("SELECT hash FROM ledger_transactions WHERE chain_id = $1 ORDER BY hash", [
        chainId,
      ])
    ).rows.map((r) => r.hash);
  /** The router's TransactionManager events on the chain from block 0, as `<hash>:<logIndex>`. */
  const chainEvents = async (chainId: number): Promise<string[]> => {
    const events = await scanRouterEvents({
      provider: providerFor(chainId),
      transactionManager: chainOf(chainId).deployment.transactionManager,
      router: stack().router,
      fromBlock: 0,
      toBlock: await chainOf(chainId).provider.getBlockNumber(),
      onUndecodable: () => undefined,
    });
    return events.map((e) => `${e.transactionHash.toLowerCase()}:${e.logIndex}`).sort();
  };
  const bookedEvents = async (chainId: number): Promise<string[]> =>
    (
      await pool.query<{ key: string }>(
        "SELECT tx_hash || ':' || log_index AS key FROM ledger_events WHERE chain_id = $1",
        [chainId],
      )
    ).rows
      .map((r) => r.key)
      .sort();

  beforeAll(async () => {
    assertPrerequisites([
      "messaging-auth/main.js",
      "admin/main.js",
      "auction/main.js",
      "submitter/main.js",
      "poller/main.js",
      "ledger/main.js",
    ]);
    pg = await startPostgres();
    const databaseUrl = await pg.createDatabase("acceptance");
    const port = await getFreePort();
    const metricsPort = 20_000 + Math.floor(Math.random() * 20_000);
    // The ledger at its shipped defaults: only the database is named.
    s = await startSdkStack({ config: { port, metricsPort, ledger: { databaseUrl } } });
    baseUrl = `http://127.0.0.1:${port}`;
    ledgerMetricsUrl = `http://127.0.0.1:${metricsPort + LEDGER_METRICS_SLOT * PORTS_PER_SLOT}/metrics`;
    config = loadConfig(JSON.parse(readFileSync(s.configFile, "utf8")) as Record<string, unknown>, {}).config;
    const ledger = config.ledger;
    if (!ledger) throw new Error("config without ledger");
    pool = createLedgerPool({ ledger, logger: silent, mode: "writer", service: "test" });
    await startAuthProcess(s);
    pm2Home = mkdtempSync(join(tmpdir(), "pm2-acceptance-"));
    logDir = join(pm2Home, "logs");
    const started = await pm2("start", "ecosystem.config.js");
    if (started.status !== 0) throw new Error(`pm2 start failed:\n${started.output.slice(-3_000)}`);
    // The ecosystem starts the ledger app because the config has a ledger section.
    await waitFor(
      `every PM2 app online (${APPS.join(", ")})`,
      async () => {
        const online = (await jlist()).filter((a) => a.pm2_env.status === "online").map((a) => a.name);
        return APPS.every((name) => online.includes(name)) ? true : undefined;
      },
      40_000,
    ).catch(failWith(APPS));
    expect((await jlist()).map((a) => a.name).sort()).toEqual([...APPS].sort());
    const status = await waitForAuctionStatus({ messagingUrl: s.stack.nats?.url ?? "", authUrl: s.authUrl }, 20_000);
    expect(getAddress(String(status.signerAddress))).toBe(s.router);
    // The reconciliation's baseline, before the router sent anything.
    const baseline = await reconcileOnce(reconcileDeps());
    expect([...baseline.values()].map((o) => o.kind)).toEqual(["baseline", "baseline", "baseline"]);
  }, 120_000);

  afterAll(async () => {
    if (pm2Home) {
      await pm2("kill");
      rmSync(pm2Home, { recursive: true, force: true });
    }
    for (const p of providers.values()) p.destroy();
    await pool?.end();
    await s?.stop();
    await pg?.stop();
  }, 30_000);

  const swapParams = (user: Wallet, pool: { sending: string; receiving: string; amount: bigint }): SdkSwapParams => {
    const st = stack();
    const chain = (c: StackChain): SdkSwapParams["chains"][number] => ({
      rpcUrl: c.anvil.url,
      transactionManager: c.deployment.transactionManager,
      subgraph: st.subgraphs.get(c.chainId)?.url ?? "",
    });
    return {
      mode: "user",
      natsUrl: st.stack.nats?.url ?? "",
      authUrl: st.authUrl,
      sendingChainId: SENDING,
      receivingChainId: RECEIVING,
      sendingAssetId: pool.sending,
      receivingAssetId: pool.receiving,
      amount: pool.amount.toString(),
      chains: { [SENDING]: chain(st.sending), [RECEIVING]: chain(st.receiving) },
      userPrivateKey: user.privateKey,
      stepTimeoutMs: STEP_TIMEOUT_MS,
    };
  };
  const awaitClaim = (r: SdkSwapResult) =>
    waitFor(
      `the router's claim of ${r.quote.bid.transactionId} on ${SENDING}`,
      async () => (await transferEvents(stack().sending, "fulfilled", r.quote.bid.transactionId))[0],
      20_000,
    );

  it("a relayed TEST swap with submitter-1338 SIGKILLed while its receiving prepare is in the mempool", async () => {
    const st = stack();
    const user = await fundedUser(st);
    const names = [`submitter-${RECEIVING}`, "auction", "poller"];
    let onQuote: () => void = () => undefined;
    const quoted = new Promise<void>((done) => {
      onQuote = done;
    });
    const swap = runSdkSwap(
      {
        ...swapParams(user, {
          sending: st.sending.deployment.token,
          receiving: st.receiving.deployment.token,
          amount: AMOUNT,
        }),
        mode: "relayed",
        relayerFee: RELAYER_FEE.toString(),
      },
      SWAP_TIMEOUT_MS,
      (step) => {
        if (step === "quote") onQuote();
      },
    );
    swap.catch(() => undefined);
    await Promise.race([quoted, swap.then(() => Promise.reject(new Error("finished before a quote")))]).catch(
      failWith(names),
    );
    await st.receiving.anvil.setAutomine(false);
    try {
      await waitFor(
        "the router's receiving prepare pending in the 1338 mempool",
        async () => {
          const [mined, pending] = await Promise.all([
            st.receiving.provider.getTransactionCount(st.router, "latest"),
            st.receiving.provider.getTransactionCount(st.router, "pending"),
          ]);
          return pending > mined || undefined;
        },
        STEP_TIMEOUT_MS,
      ).catch(failWith(names));
      await killAndAwaitRestart(`submitter-${RECEIVING}`).catch(failWith(names));
    } finally {
      await st.receiving.anvil.setAutomine(true);
      await st.receiving.anvil.mine(1);
    }
    const r = await swap.catch(failWith(names));
    expect(getAddress(r.fulfilled.sender ?? "")).toBe(st.router);
    await awaitClaim(r);
    swaps.push(r);
  }, 90_000);

  // The shipped default's one poller process of both chains: the kill stops both chains' pollers at once, and the
  // swap needs both back (1337's to see the prepare and the claim's turn, 1338's to see the user's fulfill).
  it("a native ETH swap (user fulfill) with the poller of 1337 and 1338 SIGKILLed at the quote", async () => {
    const st = stack();
    const user = await fundedUser(st);
    const names = ["poller", "auction", `submitter-${RECEIVING}`];
    let killed: Promise<Pm2Entry> | undefined;
    const r = await runSdkSwap(
      swapParams(user, { sending: ZeroAddress, receiving: ZeroAddress, amount: NATIVE_AMOUNT }),
      SWAP_TIMEOUT_MS,
      (step) => {
        if (step === "quote") killed = killAndAwaitRestart("poller");
      },
    ).catch(failWith(names));
    expect(killed).toBeDefined();
    await killed;
    expect(getAddress(r.fulfilled.sender ?? "")).toBe(user.address);
    await awaitClaim(r);
    swaps.push(r);
  }, 90_000);

  it("remove-liquidity, add-liquidity-for and migrate-liquidity through the admin API", async () => {
    const st = stack();
    const token = st.receiving.deployment.token;
    // Removes: TEST to a stranger, native to the signer itself (it moves the signer's balance).
    for (const [assetId, amount, recipientAddress] of [
      [token, parseEther("3"), Wallet.createRandom().address],
      [ZeroAddress, parseEther("0.5"), st.router],
    ] as const) {
      const res = await post("/remove-liquidity", {
        chainId: RECEIVING,
        assetId,
        amount: amount.toString(),
        recipientAddress,
      });
      expect(res.status).toBe(200);
      await minedReceipt(RECEIVING, (res.body as { transactionHash: string }).transactionHash);
    }
    // Adds: TEST from the signer's wallet (an approval first), native from its balance.
    await mintToken(st.receiving.deployment, st.router, parseEther("5"));
    for (const [assetId, amount] of [
      [token, parseEther("5")],
      [ZeroAddress, parseEther("2")],
    ] as const) {
      const before = await routerLiquidity(st.receiving, st.router, assetId);
      const res = await post("/add-liquidity-for", { chainId: RECEIVING, assetId, amount: amount.toString() });
      expect(res.status).toBe(200);
      await minedReceipt(RECEIVING, (res.body as { transactionHash: string }).transactionHash);
      await expect(routerLiquidity(st.receiving, st.router, assetId)).resolves.toBe(before + amount);
    }

    // Migrate needs clean-up mode (read at the admin's start) and an approved new router.
    const raw = JSON.parse(readFileSync(st.configFile, "utf8")) as Record<string, unknown>;
    writeFileSync(st.configFile, JSON.stringify({ ...raw, cleanUpMode: true }));
    const admin = await app("admin");
    expect((await pm2("restart", "admin")).status).toBe(0);
    await waitFor(
      "the admin back online in clean-up mode",
      async () => {
        const now = await app("admin");
        if (now.pid === admin.pid || now.pm2_env.status !== "online") return undefined;
        const res = await fetch(`${baseUrl}/status`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).catch(
          () => undefined,
        );
        return res?.ok || undefined;
      },
      30_000,
    ).catch(failWith(["admin"]));
    const newRouter = Wallet.createRandom().address;
    await (await st.sending.deployment.contracts.transactionManager.getFunction("addRouter")(newRouter)).wait();
    const moved = {
      token: await routerLiquidity(st.sending, st.router, st.sending.deployment.token),
      native: await routerLiquidity(st.sending, st.router, ZeroAddress),
    };
    const requestId = randomUUID();
    // The swaps' records close once the pollers saw the claims: until then it refuses (open_transfers), moving nothing.
    const res = await waitFor(
      "migrate-liquidity accepted on 1337",
      async () => {
        const r = await post("/migrate-liquidity", { chainId: SENDING, newRouterAddress: newRouter }, requestId);
        return r.status === 200 ? r : undefined;
      },
      30_000,
    ).catch(failWith(["admin"]));
    const entries = res.body as Array<{
      assetId: string;
      amount: string;
      removeLiquidityTx: string;
      addLiquidityForTx: string;
    }>;
    expect(entries.map((e) => [e.assetId, e.amount])).toEqual([
      [st.sending.deployment.token, moved.token.toString()],
      [ZeroAddress, moved.native.toString()],
    ]);
    for (const e of entries) await minedReceipt(SENDING, e.addLiquidityForTx);
    await expect(routerLiquidity(st.sending, newRouter, ZeroAddress)).resolves.toBe(moved.native);
    await expect(routerLiquidity(st.sending, st.router, st.sending.deployment.token)).resolves.toBe(0n);
  }, 120_000);

  it("the books equal the chains: every signer transaction once, to the wei of its receipt; every event of the router once", async () => {
    const chains = [CHAIN1, SENDING, RECEIVING];
    const signerSets = new Map(await Promise.all(chains.map(async (id) => [id, await signerTxs(id)] as const)));
    const eventSets = new Map(await Promise.all(chains.map(async (id) => [id, await chainEvents(id)] as const)));
    expect(signerSets.get(CHAIN1)).toEqual([]);
    // Booked: the ledger works through what the producers named (no sleeps: the books are polled).
    await waitFor(
      "the ledger to book every signer transaction and every event of the router",
      async () => {
        for (const id of chains) {
          if ((await bookedTxs(id)).join() !== signerSets.get(id)?.join()) return undefined;
          if ((await bookedEvents(id)).join() !== eventSets.get(id)?.join()) return undefined;
        }
        return true;
      },
      60_000,
    ).catch(async (err: unknown) => {
      const detail = await Promise.all(
        chains.map(async (id) => {
          const booked = await bookedTxs(id);
          const events = await bookedEvents(id);
          return {
            chainId: id,
            txsMissing: signerSets.get(id)?.filter((h) => !booked.includes(h)),
            txsExtra: booked.filter((h) => !signerSets.get(id)?.includes(h)),
            eventsMissing: eventSets.get(id)?.filter((e) => !events.includes(e)),
            eventsExtra: events.filter((e) => !eventSets.get(id)?.includes(e)),
          };
        }),
      );
      failWith(["ledger", "poller"])(
        new Error(`${err instanceof Error ? err.message : String(err)}\n${JSON.stringify(detail, null, 1)}`),
      );
    });

    // Every row to the wei of its raw receipt.
    const rows = (await pool.query<TxRow>("SELECT * FROM ledger_transactions ORDER BY chain_id, hash")).rows;
    let receiptsWei = 0n;
    for (const row of rows) {
      const receipt = (await chainOf(row.chain_id).provider.send("eth_getTransactionReceipt", [
        row.hash,
      ])) as RawReceipt;
      const l1Fee = BigInt(receipt.l1Fee ?? 0);
      const cost = BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice) + l1Fee;
      expect({
        hash: row.hash,
        gasUsed: row.gas_used,
        price: row.effective_gas_price,
        l1: row.l1_fee_wei,
        cost: row.cost_wei,
      }).toEqual({
        hash: row.hash,
        gasUsed: BigInt(receipt.gasUsed).toString(),
        price: BigInt(receipt.effectiveGasPrice).toString(),
        l1: l1Fee.toString(),
        cost: cost.toString(),
      });
      // And the native it sent besides gas (a native add, the migration's add for the new router): the value.
      const sent = await chainOf(row.chain_id).provider.getTransaction(row.hash);
      expect({ hash: row.hash, value: row.value_wei }).toEqual({ hash: row.hash, value: String(sent?.value) });
      receiptsWei += cost;
    }
    const kinds = rows.map((r) => r.kind);
    for (const kind of ["prepare", "fulfill", "relay", "remove-liquidity", "add-liquidity", "approve"]) {
      expect(kinds).toContain(kind);
    }
    console.log(
      `ledger-acceptance: ${rows.length} signer transactions booked (${JSON.stringify(Object.fromEntries([SENDING, RECEIVING].map((id) => [id, signerSets.get(id)?.length])))}), ` +
        `events ${JSON.stringify(Object.fromEntries([SENDING, RECEIVING].map((id) => [id, eventSets.get(id)?.length])))}, gas ${receiptsWei} wei`,
    );

    // The ledger process's wei counter: the receipts' sum (it booked every row and never restarted).
    const metrics = await (await fetch(ledgerMetricsUrl)).text();
    const counted = metrics
      .split("\n")
      .filter((l) => l.startsWith("router_gas_spent_wei_total{"))
      .reduce((sum, l) => sum + BigInt(Math.round(Number(l.slice(l.lastIndexOf(" ") + 1)))), 0n);
    expect(counted).toBe(receiptsWei);
  }, 120_000);

  it("each swap's feeEarned is what came in minus what went out, from the chains' events; GET /pnl is the sum of the books", async () => {
    const st = stack();
    expect(swaps).toHaveLength(2);
    const views: SwapView[] = [];
    for (const r of swaps) {
      const id = r.quote.bid.transactionId;
      const view = await waitFor(
        `GET /ledger/${id} claimed`,
        async () => {
          const res = await get<SwapView>(`/ledger/${id}`);
          return res.status === 200 && res.body.status === "claimed" ? res.body : undefined;
        },
        30_000,
      );
      const [claim] = await transferEvents(st.sending, "fulfilled", id);
      const [paid] = await transferEvents(st.receiving, "fulfilled", id);
      // Both assets have 18 decimals here: no normalisation.
      const cameIn = BigInt(claim.txData.amount);
      const wentOut = BigInt(paid.txData.amount);
      expect({ id, feeEarned: view.feeEarned, amountIn: view.amountIn, amountOut: view.amountOut }).toEqual({
        id,
        feeEarned: (cameIn - wentOut).toString(),
        amountIn: cameIn.toString(),
        amountOut: wentOut.toString(),
      });
      expect(cameIn - wentOut).toBeGreaterThan(0n);
      views.push(view);
    }
    expect(views.map((v) => v.relayerFeeEarned)).toEqual([RELAYER_FEE.toString(), "0"]);

    const rows = (await pool.query<TxRow>("SELECT * FROM ledger_transactions")).rows;
    const head = await st.sending.provider.getBlock("latest");
    const to = Math.max(head?.timestamp ?? 0, (await st.receiving.provider.getBlock("latest"))?.timestamp ?? 0) + 1;
    const res = await get<PnlReport>(`/pnl?from=0&to=${to}`);
    expect(res.status).toBe(200);
    const report = res.body;
    const sum = (values: ReadonlyArray<number | string | null>) =>
      values.reduce<number>((a, v) => a + Number(v ?? 0), 0);
    expect(report.unpriced).toBe(0);
    expect(report.swaps).toEqual({ claimed: 2, cancelled: 0 });
    expect(report.usd.feeEarned).toBeCloseTo(sum(views.map((v) => v.usd.feeEarned)), 12);
    expect(report.usd.relayerFeeEarned).toBeCloseTo(sum(views.map((v) => v.usd.relayerFeeEarned)), 12);
    const swapIds = new Set(views.map((v) => v.transactionId));
    const other = rows.filter((r) => !swapIds.has(r.transaction_id ?? ""));
    expect(report.usd.gasCost).toBeCloseTo(
      sum(views.map((v) => v.usd.gasCost)) + sum(other.map((r) => r.cost_usd)),
      12,
    );
    expect(report.usd.net).toBeCloseTo(report.usd.feeEarned + report.usd.relayerFeeEarned - report.usd.gasCost, 12);
    expect(report.chains.map((c) => c.chainId).sort()).toEqual([SENDING, RECEIVING]);
    for (const chain of report.chains) {
      const wei = rows.filter((r) => r.chain_id === chain.chainId).reduce((a, r) => a + BigInt(r.cost_wei), 0n);
      expect(chain.gasSpentWei).toBe(wei.toString());
    }
  }, 60_000);

  it("reconciliation: no drift on any chain, in GET /status", async () => {
    const outcomes = await reconcileOnce(reconcileDeps());
    const checked = [...outcomes].map(([chainId, o]) => ({
      chainId,
      kind: o.kind,
      drift:
        o.kind === "checked" ? o.lines.filter((l) => l.flagged).map((l) => `${l.subject} ${l.assetId} ${l.drift}`) : [],
    }));
    expect(checked).toEqual(
      [CHAIN1, SENDING, RECEIVING].map((chainId) => ({
        chainId,
        kind: chainId === CHAIN1 ? "nothing-new" : "checked",
        drift: [],
      })),
    );
    const status = await get<{ ledger?: { drift: boolean; reconciliation: unknown[] } }>("/status");
    expect(status.body.ledger?.drift).toBe(false);
    expect(status.body.ledger?.reconciliation.length).toBeGreaterThan(0);
  }, 60_000);

  it("npm run ledger -- rebuild --from-block 0 gives the live totals", async () => {
    const out: string[] = [];
    const report = await runRebuild(
      { fromBlock: 0 },
      { config, logger: silent, out: (l) => out.push(l), redis: stack().redis },
    );
    expect({ same: report.same, output: out.join("\n") }).toMatchObject({ same: true });
    expect(report.comparison.length).toBeGreaterThan(0);
  }, 120_000);
});

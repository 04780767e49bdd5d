import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ZeroAddress, getAddress, parseEther, type Wallet } from "ethers";
import { waitForAuctionStatus } from "../../scripts/local/demo-swap";
import { auditRouterTxs, describeAudit, type ChainAudit } from "../fault/swap-audit";
import { getFreePort } from "../harness/free-port";
import type { StackChain } from "../harness/stack";
import { transferEvents } from "./e2e-user";
import { runSdkSwap, type SdkSwapParams, type SdkSwapResult } from "./run-sdk-swap";
import {
  RECEIVING,
  SENDING,
  assertPrerequisites,
  fundedUser,
  routerLiquidity,
  startAuthProcess,
  startSdkStack,
  tokenBalance,
  type SdkStack,
} from "./sdk-fixture";
import { waitFor } from "../harness/wait";

/**
 * The whole ecosystem under PM2 (ecosystem.config.js, the project's own pm2, a PM2_HOME of the test's own, one
 * submitter per chain: SUBMITTER_STANDBYS=0, so PM2's restart is the only recovery) on local anvil chains. The
 * real @connext/nxtp-sdk@0.1.42 swaps TEST 1337 → 1338 (user fulfill), once undisturbed, then with submitter-1338
 * SIGKILLed while the router's
 * receiving prepare is broadcast but not yet mined. To make that moment certain rather than a matter of luck,
 * 1338 stops mining from the quote on (its mempool holds the prepare) until PM2 has the submitter online again.
 * Both swaps must complete to the wei, with one mined, successful router transaction per operation, and the
 * router signer's nonces on 1338 contiguous from 0 across the whole run (test/fault/swap-audit.ts scans the blocks).
 */
const ROOT = resolve(__dirname, "../..");
const PM2 = join(ROOT, "node_modules/.bin/pm2");
const AMOUNT = parseEther("10");
const NATIVE_AMOUNT = parseEther("1");
/** What the user offers the router for relaying; above its estimate (native and TEST share one oracle price). */
const RELAYER_FEE = parseEther("0.001");
/** Relayed swaps in a row per pool at the shipped defaults (the SDK's relayed fulfill once raced the poller). */
const RELAYED_ROUNDS = 3;
const STEP_TIMEOUT_MS = 15_000;
const SWAP_TIMEOUT_MS = 25_000;
const PM2_CALL_TIMEOUT_MS = 30_000;
const APPS = [
  "admin",
  "auction",
  // One poller process for both swap chains. Chain 1 is in no swap pool (gas pricing only): the ecosystem gives
  // it no submitter and no poller.
  ...[SENDING, RECEIVING].map((id) => `submitter-${id}`),
  "poller",
].sort();
const VICTIM = `submitter-${RECEIVING}`;
const LOG_TAIL_CHARS = 3_000;

interface Pm2Entry {
  readonly name: string;
  readonly pid: number;
  readonly pm2_env: { readonly status: string; readonly restart_time: number };
}

describe("PM2 runs the whole ecosystem: a real SDK swap survives a SIGKILLed receiving submitter", () => {
  let s: SdkStack | undefined;
  let pm2Home: string | undefined;
  let logDir: string;
  /** The first block of each swap chain after the stack's setup: the audits scan the whole run from there. */
  const fromBlock = { sending: 0, receiving: 0 };

  // Asynchronous: the jest process keeps reading the SDK driver's output meanwhile.
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
  /** The last lines of the apps' PM2 logs, for failure messages. */
  const logTails = (names: readonly string[]): string =>
    names
      .flatMap((name) => [`${name}.out.log`, `${name}.error.log`])
      .map((file) => {
        const path = join(logDir, file);
        const text = existsSync(path) ? readFileSync(path, "utf8").slice(-LOG_TAIL_CHARS) : "(missing)";
        return `--- ${file} (tail) ---\n${text}`;
      })
      .join("\n");

  /** The app's JSON log lines that name a job (PM2 prefixes each line with its date). */
  const jobLines = (name: string): Array<{ pid?: number; jobId?: string; message?: string }> =>
    readFileSync(join(logDir, `${name}.out.log`), "utf8")
      .split("\n")
      .flatMap((line) => {
        try {
          const parsed = JSON.parse(line.slice(line.indexOf("{"))) as {
            pid?: number;
            jobId?: string;
            message?: string;
          };
          return typeof parsed.jobId === "string" ? [parsed] : [];
        } catch {
          return []; // not a JSON line
        }
      });

  beforeAll(async () => {
    assertPrerequisites([
      "messaging-auth/main.js",
      "admin/main.js",
      "auction/main.js",
      "submitter/main.js",
      "poller/main.js",
    ]);
    // Free ports so that parallel suites never collide: the admin API, and a metrics base for the 8 apps' slots.
    const port = await getFreePort();
    const metricsPort = 20_000 + Math.floor(Math.random() * 30_000);
    s = await startSdkStack({ config: { port, metricsPort } });
    fromBlock.sending = (await s.sending.provider.getBlockNumber()) + 1;
    fromBlock.receiving = (await s.receiving.provider.getBlockNumber()) + 1;
    await startAuthProcess(s);
    pm2Home = mkdtempSync(join(tmpdir(), "pm2-sdk-"));
    logDir = join(pm2Home, "logs");
    const started = await pm2("start", "ecosystem.config.js");
    if (started.status !== 0) throw new Error(`pm2 start failed:\n${started.output.slice(-3_000)}`);
    // With wait_ready, PM2 reports `online` only once the process sent "ready".
    await waitFor(
      `every PM2 app online (${APPS.join(", ")})`,
      async () => {
        const online = (await jlist()).filter((a) => a.pm2_env.status === "online").map((a) => a.name);
        return APPS.every((name) => online.includes(name)) ? true : undefined;
      },
      30_000,
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${logTails(APPS)}`);
    });
    const status = await waitForAuctionStatus({ messagingUrl: s.stack.nats?.url ?? "", authUrl: s.authUrl }, 20_000);
    expect(getAddress(String(status.signerAddress))).toBe(s.router);
  }, 60_000);

  afterAll(async () => {
    if (pm2Home) {
      await pm2("kill");
      rmSync(pm2Home, { recursive: true, force: true });
    }
    await s?.stop();
  }, 30_000);

  const swapParams = (stack: SdkStack, userPrivateKey: string): SdkSwapParams => {
    const chain = (c: StackChain): SdkSwapParams["chains"][number] => ({
      rpcUrl: c.anvil.url,
      transactionManager: c.deployment.transactionManager,
      subgraph: stack.subgraphs.get(c.chainId)?.url ?? "",
    });
    return {
      mode: "user",
      natsUrl: stack.stack.nats?.url ?? "",
      authUrl: stack.authUrl,
      sendingChainId: SENDING,
      receivingChainId: RECEIVING,
      sendingAssetId: stack.sending.deployment.token,
      receivingAssetId: stack.receiving.deployment.token,
      amount: AMOUNT.toString(),
      chains: { [SENDING]: chain(stack.sending), [RECEIVING]: chain(stack.receiving) },
      userPrivateKey,
      stepTimeoutMs: STEP_TIMEOUT_MS,
    };
  };

  interface Balances {
    readonly userSending: bigint;
    readonly userReceiving: bigint;
    readonly liquiditySending: bigint;
    readonly liquidityReceiving: bigint;
  }
  const balances = async (stack: SdkStack, user: string): Promise<Balances> => ({
    userSending: await tokenBalance(stack.sending, user),
    userReceiving: await tokenBalance(stack.receiving, user),
    liquiditySending: await routerLiquidity(stack.sending, stack.router),
    liquidityReceiving: await routerLiquidity(stack.receiving, stack.router),
  });
  /** The router's claim on 1337 landed, and every balance moved by the bid's amounts, to the wei. */
  const expectSettled = async (stack: SdkStack, user: string, before: Balances, r: SdkSwapResult): Promise<void> => {
    const amountReceived = BigInt(r.quote.bid.amountReceived);
    expect(r.receiverPrepared.txData.amount).toBe(r.quote.bid.amountReceived);
    expect(getAddress(r.fulfilled.sender ?? "")).toBe(user);
    await waitFor(
      "the router's fulfill on 1337 (its claim)",
      async () => (await transferEvents(stack.sending, "fulfilled", r.quote.bid.transactionId))[0],
      10_000,
    );
    expect(await balances(stack, user)).toEqual({
      userSending: before.userSending - AMOUNT,
      userReceiving: before.userReceiving + amountReceived,
      liquiditySending: before.liquiditySending + AMOUNT,
      liquidityReceiving: before.liquidityReceiving - amountReceived,
    });
  };

  /** The router's own transactions of one transfer, by method. */
  const routerTxsOf = (audit: ChainAudit, transactionId: string): Array<{ method: string; status: number | null }> =>
    audit.txs.filter((t) => t.transactionId === transactionId).map((t) => ({ method: t.method, status: t.status }));

  it("a swap with the real SDK through the PM2-run router moves the balances to the wei", async () => {
    if (!s) throw new Error("stack not started");
    const user = await fundedUser(s);
    const before = await balances(s, user.address);
    const r = await runSdkSwap(swapParams(s, user.privateKey), SWAP_TIMEOUT_MS).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${logTails([VICTIM, "poller"])}`);
    });
    console.log(`pm2-sdk: undisturbed swap in ${r.totalMs} ms`);
    await expectSettled(s, user.address, before, r);
  }, 30_000);

  it("SIGKILL of submitter-1338 with the receiving prepare in flight: PM2 restarts it, the swap completes once", async () => {
    if (!s) throw new Error("stack not started");
    const stack = s;
    const { sending, receiving, router } = stack;
    const user = await fundedUser(stack);
    const before = await balances(stack, user.address);
    const victim = await app(VICTIM);
    expect(victim.pm2_env.status).toBe("online");

    let onQuote: () => void = () => undefined;
    const quoted = new Promise<void>((done) => {
      onQuote = done;
    });
    const swap = runSdkSwap(swapParams(stack, user.privateKey), SWAP_TIMEOUT_MS, (step) => {
      if (step === "quote") onQuote();
    });
    // Settled below; a failure meanwhile must not be an unhandled rejection.
    swap.catch(() => undefined);
    const failWith = (err: unknown): never => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${logTails([VICTIM, "poller"])}`);
    };
    await Promise.race([
      quoted,
      swap.then(() => Promise.reject(new Error("the driver finished before a quote"))),
    ]).catch(failWith);

    let restarted: Pm2Entry;
    await receiving.anvil.setAutomine(false);
    try {
      // The router's receiving prepare is signed and broadcast, held unmined in 1338's mempool.
      const nonceInFlight = await waitFor(
        "the router's receiving prepare pending in the 1338 mempool",
        async () => {
          const [mined, pending] = await Promise.all([
            receiving.provider.getTransactionCount(router, "latest"),
            receiving.provider.getTransactionCount(router, "pending"),
          ]);
          return pending > mined ? mined : undefined;
        },
        STEP_TIMEOUT_MS,
      ).catch(failWith);
      process.kill(victim.pid, "SIGKILL");
      restarted = await waitFor(
        `PM2 restarting ${VICTIM} (pid ${victim.pid} SIGKILLed) and it reporting ready`,
        async () => {
          const now = await app(VICTIM);
          return now.pid !== victim.pid && now.pid > 0 && now.pm2_env.status === "online" ? now : undefined;
        },
        15_000,
      ).catch(failWith);
      // Still unmined when the old process died: the kill really landed mid-flight.
      expect(await receiving.provider.getTransactionCount(router, "latest")).toBe(nonceInFlight);
    } finally {
      await receiving.anvil.setAutomine(true);
      await receiving.anvil.mine(1);
    }
    expect(restarted.pm2_env.restart_time).toBe(victim.pm2_env.restart_time + 1);

    const r: SdkSwapResult = await swap.catch(failWith);
    const transactionId = r.quote.bid.transactionId;
    await expectSettled(stack, user.address, before, r).catch(failWith);

    // What the chains say since the stack's setup (both swaps): one router transaction per operation, none
    // reverted, no nonce hole on 1338.
    const audits = {
      sending: await auditRouterTxs(sending, router, fromBlock.sending),
      receiving: await auditRouterTxs(receiving, router, fromBlock.receiving),
    };
    console.log(
      `pm2-sdk: swap in ${r.totalMs} ms (steps ${JSON.stringify({ quote: r.quote.ms, senderPrepared: r.senderPrepared.ms, receiverPrepared: r.receiverPrepared.ms, fulfilled: r.fulfilled.ms })}); ${describeAudit(audits.sending)}; ${describeAudit(audits.receiving)}`,
    );
    expect(routerTxsOf(audits.receiving, transactionId)).toEqual([{ method: "prepare", status: 1 }]);
    expect(routerTxsOf(audits.sending, transactionId)).toEqual([{ method: "fulfill", status: 1 }]);
    for (const audit of [audits.sending, audits.receiving]) {
      expect(audit.reverted).toEqual([]);
      expect(audit.duplicates).toEqual([]);
    }
    expect(audits.receiving.txs.map((t) => t.method)).toEqual(["prepare", "prepare"]);
    expect(audits.sending.txs.map((t) => t.method)).toEqual(["fulfill", "fulfill"]);
    expect(audits.receiving.firstNonce).toBe(0);
    expect(audits.receiving.nonceGaps).toEqual([]);
    // Every nonce the signer used on 1338 is mined, and nothing of it is left pending (no stray replacement).
    const minedCount = await receiving.provider.getTransactionCount(router, "latest");
    expect(audits.receiving.lastNonce).toBe(minedCount - 1);
    expect(await receiving.provider.getTransactionCount(router, "pending")).toBe(minedCount);

    // The job was finished by PM2's new process, which took it over from its record (not by the killed one).
    await waitFor(
      `"job completed" for ${transactionId} logged by ${VICTIM}'s new process (pid ${restarted.pid})`,
      async () =>
        jobLines(VICTIM).some(
          (l) => l.jobId?.includes(transactionId) && l.pid === restarted.pid && l.message === "job completed",
        ) || undefined,
      10_000,
    ).catch(failWith);
    // Only the victim restarted, exactly once.
    const restarts = Object.fromEntries((await jlist()).map((a) => [a.name, a.pm2_env.restart_time]));
    expect(restarts).toEqual(Object.fromEntries(APPS.map((name) => [name, name === VICTIM ? 1 : 0])));
  }, 60_000);

  it(`${RELAYED_ROUNDS} relayed swaps in a row in each pool (TEST and native ETH), every process at its shipped defaults`, async () => {
    if (!s) throw new Error("stack not started");
    const stack = s;
    const pools = [
      {
        name: "TEST",
        amount: AMOUNT,
        sending: stack.sending.deployment.token,
        receiving: stack.receiving.deployment.token,
      },
      { name: "ETH", amount: NATIVE_AMOUNT, sending: ZeroAddress, receiving: ZeroAddress },
    ];
    // Every user funded first, one after another: fundedUser's mints are the deployer's, one nonce sequence.
    const users = new Map<string, Wallet[]>();
    for (const pool of pools) {
      const funded: Wallet[] = [];
      for (let round = 1; round <= RELAYED_ROUNDS; round += 1) funded.push(await fundedUser(stack));
      users.set(pool.name, funded);
    }
    // The two pools' rows side by side, each pool's swaps still one after another (a swap starts once the previous
    // one's claim landed): what a row checks is its own pool's asset, which the other pool's swaps do not move.
    const rows = pools.map(async (pool) => {
      const timings: string[] = [];
      for (const [i, user] of (users.get(pool.name) ?? []).entries()) {
        const round = i + 1;
        const liquidityBefore = await routerLiquidity(stack.receiving, stack.router, pool.receiving);
        const userBefore = await tokenBalance(stack.receiving, user.address, pool.receiving);
        const params: SdkSwapParams = {
          ...swapParams(stack, user.privateKey),
          mode: "relayed",
          relayerFee: RELAYER_FEE.toString(),
          sendingAssetId: pool.sending,
          receivingAssetId: pool.receiving,
          amount: pool.amount.toString(),
        };
        const r = await runSdkSwap(params, SWAP_TIMEOUT_MS).catch((err: unknown) => {
          throw new Error(
            `${pool.name} relayed swap ${round}: ${err instanceof Error ? err.message : String(err)}\n${logTails(["auction", "poller", `submitter-${RECEIVING}`])}`,
          );
        });
        timings.push(`${pool.name}#${round} ${r.totalMs} ms (fulfilled at ${r.fulfilled.ms})`);
        const amountReceived = BigInt(r.quote.bid.amountReceived);
        // The router relayed it (it sent the fulfill), the user paid only the relayer fee, and the router then claimed.
        expect(getAddress(r.fulfilled.sender ?? "")).toBe(stack.router);
        expect(r.fulfilled.relayerFee).toBe(RELAYER_FEE.toString());
        expect(await tokenBalance(stack.receiving, user.address, pool.receiving)).toBe(
          userBefore + amountReceived - RELAYER_FEE,
        );
        expect(await routerLiquidity(stack.receiving, stack.router, pool.receiving)).toBe(
          liquidityBefore - amountReceived,
        );
        await waitFor(
          `the router's claim of the ${pool.name} swap ${round} on 1337`,
          async () => (await transferEvents(stack.sending, "fulfilled", r.quote.bid.transactionId))[0],
          15_000,
        );
      }
      return timings;
    });
    // allSettled: a failed row must not leave the other's driver running past the test.
    const settled = await Promise.allSettled(rows);
    const failed = settled.find((x): x is PromiseRejectedResult => x.status === "rejected");
    if (failed) throw failed.reason;
    const timings = settled.flatMap((x) => (x.status === "fulfilled" ? x.value : []));
    console.log(`pm2-sdk: relayed swaps at the defaults: ${timings.join("; ")}`);
  }, 240_000);
});

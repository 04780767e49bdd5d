/**
 * `npm run bench:auction [-- <instances>]`: starts nats-server, redis-server, two anvil chains (1 with a
 * ConnextPriceOracle, 1337), the local messaging auth service, and N auction processes from dist (default 1,
 * or BENCH_AUCTIONS) as child processes, then asks for bids the way the SDK does (publish on
 * `<me>.<me>.auction.request`, wait for `<me>.<router>.auction.response`), each with a fresh user and
 * transaction id: 20 warm-up, 200 sequential, a closed loop of 50 in flight (200 total) and a burst of 50.
 * Prints p50/p99/max publish→reply latency, bids/s, the auction processes' CPU ms per bid (from
 * /proc/<pid>/stat) and the ratio to the original router's figures. Then the reservation scripts' own time in
 * Redis with 100 000 open promises (bench/reservation-scripts.ts; BENCH_RESERVATION_SCRIPTS=0 skips it). The
 * phases' figures are also printed as one JSON line (support.ts printFigures) for bench/compare.ts.
 * BENCH_INVENTORY=1 gives the pool inventory targets (the decline's cache lookup and script check on every bid).
 * Self-contained on purpose: bench/ is compiled with the app and must not import test/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  Contract,
  ContractFactory,
  JsonRpcProvider,
  NonceManager,
  Wallet,
  ZeroAddress,
  hexlify,
  keccak256,
  parseEther,
  randomBytes,
  type Signer,
} from "ethers";
import { Redis } from "ioredis";
import { createAuthServer } from "../services/messaging-auth/app";
import { anvilBinary, natsServerBinary, redisServerBinary } from "../scripts/local/binaries";
import { getFreePort } from "../scripts/local/free-port";
import {
  anvilAnswers,
  anvilArgs,
  natsAnswers,
  natsArgs,
  redisAnswers,
  redisArgs,
  whileStarting,
} from "../scripts/local/probes";
import { pollUntil, sleep } from "../shared/timing";
import { percentile, printFigures, type BenchFigures } from "./support";
import { benchReservationScripts, reportReservationScripts } from "./reservation-scripts";
import { startStack, stopStack } from "./recovery";
import { pm2DaemonPid, pm2List, runPm2 } from "../scripts/local/pm2";
import { packageArtifact, type NxtpContractName } from "../scripts/nxtp-package";
import { createLogger } from "../shared/logging/create-logger";
import { connectMessaging, type Messaging } from "../shared/messaging";
import { createBalanceStore } from "../shared/transfers/balance-store";

const SENDING = 1337;
/** anvil's account 0 (public test key): deploys. */
const DEPLOYER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const CLK_TCK = 100;

/** The original router (0.1.37) as measured for this project (docs/protocol.md#deviations, same shape of load). */
const ORIGINAL = {
  sequential: { p50: [6, 7], p99: [14, 16] },
  inFlight50: { p50: [150, 200], p99: [210, 290] },
  cpuMsPerBid: 5.5,
};

interface Phase {
  readonly name: string;
  readonly latenciesMs: number[];
  readonly wallMs: number;
  readonly cpuMs: number;
  /** The kernel's part of cpuMs (stime: socket reads and writes, mostly). */
  readonly sysMs: number;
  /** The bench client's own CPU (this process: requests, replies, the auth server), for the cores' budget. */
  readonly clientMs: number;
}

/** The PM2 daemon's entry among the measured processes (not a router process, but on the same cores). */
const PM2_DAEMON = "pm2-daemon";

async function main(): Promise<void> {
  const instances = Number(process.argv[2] ?? process.env.BENCH_AUCTIONS ?? 1);
  if (!Number.isSafeInteger(instances) || instances < 1) {
    throw new Error(`instance count must be a positive integer, got ${process.argv[2]}`);
  }
  if (process.env.BENCH_STACK === "pm2") {
    await benchPm2Stack(instances);
    return;
  }
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), "bench-auction-"));
  try {
    const [redisPort, natsPort, anvil1Port, anvil2Port] = [
      await getFreePort(),
      await getFreePort(),
      await getFreePort(),
      await getFreePort(),
    ];
    children.push(spawn(redisServerBinary(), redisArgs(redisPort), { stdio: "ignore" }));
    children.push(spawn(natsServerBinary(), natsArgs(natsPort), { stdio: "ignore" }));
    for (const [port, chainId] of [
      [anvil1Port, 1],
      [anvil2Port, SENDING],
    ]) {
      children.push(spawn(anvilBinary(), anvilArgs(port, chainId), { stdio: "ignore" }));
    }
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    const rpc1 = `http://127.0.0.1:${anvil1Port}`;
    const rpc2 = `http://127.0.0.1:${anvil2Port}`;
    await pollUntil(
      "redis",
      whileStarting(() => redisAnswers(redisPort, 500)),
    );
    await pollUntil(
      "anvil",
      whileStarting(
        async () => (await anvilAnswers(anvil1Port, 1, 500)) && (await anvilAnswers(anvil2Port, SENDING, 500)),
      ),
    );
    await pollUntil(
      "nats",
      whileStarting(() => natsAnswers(natsPort, 500)),
    );
    await runBench({ instances, redisUrl, natsUrl: `nats://127.0.0.1:${natsPort}`, rpc1, rpc2, dir, children });
  } finally {
    children.forEach((c) => c.kill("SIGKILL"));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * BENCH_STACK=pm2: the whole router as an operator runs it (bench/recovery.ts's stack: ecosystem.config.js under
 * PM2, pollers and submitters of both swap chains, admin, `instances` auctions, real balances from the chains),
 * so the CPU of every router process over the phases is measured, not only the auctions'.
 */
async function benchPm2Stack(instances: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bench-auction-pm2-"));
  const stack = await startStack(dir);
  try {
    if (instances > 1) {
      const scaled = runPm2(stack.paths, ["scale", "auction", String(instances)]);
      if (scaled.status !== 0) throw new Error(`pm2 scale failed: ${scaled.output.slice(-500)}`);
    }
    await pollUntil(
      `${instances} auction processes online`,
      async () =>
        pm2List(stack.paths).filter((a) => a.name === "auction" && a.status === "online").length === instances,
      120_000,
    );
    const apps = pm2List(stack.paths).filter((a) => a.status === "online" && a.pid > 0);
    const daemon = pm2DaemonPid(stack.paths);
    const config = JSON.parse(readFileSync(stack.paths.configFile, "utf8")) as {
      swapPools: Array<{ assets: Array<{ chainId: number; assetId: string }> }>;
    };
    const [sending, receiving] = config.swapPools[0].assets;
    await runPhases({
      natsUrl: stack.natsUrl,
      authUrl: stack.authUrl,
      pool: {
        sendingChainId: sending.chainId,
        sendingAssetId: sending.assetId,
        receivingChainId: receiving.chainId,
        receivingAssetId: receiving.assetId,
      },
      instances,
      auctionPids: apps.filter((a) => a.name === "auction").map((a) => a.pid),
      otherProcesses: [
        ...apps.filter((a) => a.name !== "auction").map((a) => ({ name: a.name, pid: a.pid })),
        ...(daemon === undefined ? [] : [{ name: PM2_DAEMON, pid: daemon }]),
      ],
    });
  } finally {
    await stopStack(stack, dir, (line) => process.stdout.write(`${line}\n`));
  }
}

interface BenchParams {
  readonly instances: number;
  readonly redisUrl: string;
  readonly natsUrl: string;
  readonly rpc1: string;
  readonly rpc2: string;
  readonly dir: string;
  readonly children: ChildProcess[];
}

async function runBench(p: BenchParams): Promise<void> {
  const provider1 = new JsonRpcProvider(p.rpc1, 1, { staticNetwork: true });
  const provider2 = new JsonRpcProvider(p.rpc2, SENDING, { staticNetwork: true });
  const deployer1 = new NonceManager(new Wallet(DEPLOYER_KEY, provider1));
  const deployer2 = new NonceManager(new Wallet(DEPLOYER_KEY, provider2));
  const token1 = await deploy(deployer1, "TestERC20", []);
  const oracle = await deploy(deployer1, "ConnextPriceOracle", [ZeroAddress]);
  await (await oracle.getFunction("setDirectPrice").send(await token1.getAddress(), parseEther("1"))).wait();
  await (await oracle.getFunction("setDirectPrice").send(ZeroAddress, parseEther("2000"))).wait();
  const token2 = await deploy(deployer2, "TestERC20", []);
  const [mainnetToken, sendingToken, oracleAddress] = [
    await token1.getAddress(),
    await token2.getAddress(),
    await oracle.getAddress(),
  ];
  provider1.destroy();
  provider2.destroy();

  const auth = await createAuthServer({ host: "127.0.0.1", port: 0 });
  const prefix = `bench${randomUUID().slice(0, 8)}`;
  const router = Wallet.createRandom();
  const config = {
    adminToken: "bench-admin-token-0123456789",
    mnemonic: router.mnemonic?.phrase,
    logLevel: process.env.BENCH_AUCTION_LOG_LEVEL ?? "info",
    redisUrl: p.redisUrl,
    redisPrefix: prefix,
    messagingUrl: p.natsUrl,
    authUrl: auth.url,
    requestLimit: 500,
    // Chain 1 ⇄ 1337; both priced on chain 1's oracle (the 1337 token through its mainnet equivalent).
    swapPools: [
      {
        assets: [
          { chainId: 1, assetId: mainnetToken },
          { chainId: SENDING, assetId: sendingToken, mainnetEquivalent: mainnetToken },
        ],
        // BENCH_INVENTORY=1: inventory targets on the pool, so every bid takes the inventory decline's path
        // (docs/auction.md, "Inventory decline"); the balances are far above any minimum, so none is declined.
        ...(process.env.BENCH_INVENTORY === "1"
          ? {
              inventory: {
                "1": { targetPercent: 50, minimumPercent: 10, floor: "1" },
                [String(SENDING)]: { targetPercent: 50, minimumPercent: 10, floor: "1" },
              },
            }
          : {}),
      },
    ],
    chainConfig: {
      "1": { providers: [p.rpc1], priceOracleAddress: oracleAddress, confirmations: 1 },
      [String(SENDING)]: {
        providers: [p.rpc2],
        transactionManagerAddress: Wallet.createRandom().address,
        confirmations: 1,
        nativeMainnetEquivalent: ZeroAddress,
      },
    },
  };
  const configFile = join(p.dir, "config.json");
  writeFileSync(configFile, JSON.stringify(config));

  const redis = new Redis(p.redisUrl);
  const balances = createBalanceStore(redis, prefix);
  const writeBalances = async (): Promise<void> => {
    await balances.setRouterBalance(1, mainnetToken, 10n ** 40n);
    // Readiness (bid-readiness.ts) waits on a fresh balance of every pool asset, the sending one included.
    await balances.setRouterBalance(SENDING, sendingToken, 10n ** 40n);
    await balances.setGasBalance(1, parseEther("100"));
    await balances.setGasBalance(SENDING, parseEther("100"));
  };
  await writeBalances();
  // The pollers' job in production: the auction refuses balances older than 60 s.
  const keepFresh = setInterval(() => void writeBalances().catch(() => undefined), 5_000);

  const pids: number[] = [];
  const main = join(__dirname, "..", "services", "auction", "main.js");
  for (let i = 0; i < p.instances; i += 1) {
    // BENCH_AUCTION_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", to profile the auction processes.
    const nodeArgs = (process.env.BENCH_AUCTION_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
    const child = spawn(process.execPath, [...nodeArgs, main], {
      env: { ...process.env, ROUTER_CONFIG_FILE: configFile },
      stdio: ["ignore", process.env.BENCH_AUCTION_LOGS === "1" ? "inherit" : "ignore", "inherit", "ipc"],
    });
    p.children.push(child);
    // run-service sends "ready" once start() resolved (caches warm, subscriptions made).
    let ready = false;
    child.on("message", (m) => {
      ready ||= m === "ready";
    });
    await pollUntil(`auction process ${i + 1}`, async () => ready || child.exitCode !== null, 60_000);
    if (child.exitCode !== null || child.pid === undefined)
      throw new Error(`auction process exited early (${child.exitCode})`);
    pids.push(child.pid);
  }

  try {
    await runPhases({
      natsUrl: p.natsUrl,
      authUrl: auth.url,
      pool: {
        sendingChainId: SENDING,
        sendingAssetId: sendingToken,
        receivingChainId: 1,
        receivingAssetId: mainnetToken,
      },
      instances: p.instances,
      auctionPids: pids,
      otherProcesses: [],
    });
    // After the phases, so they do not share Redis with it; BENCH_RESERVATION_SCRIPTS=0 skips it.
    if (process.env.BENCH_RESERVATION_SCRIPTS !== "0") {
      reportReservationScripts(await benchReservationScripts(redis, `${prefix}-scripts`));
    }
  } finally {
    clearInterval(keepFresh);
    const auctions = p.children.slice(-p.instances);
    for (const child of auctions) child.kill("SIGTERM");
    // A clean exit (profiles written, connections drained) before the servers go away.
    await pollUntil(
      "auction processes to exit",
      async () => auctions.every((c) => c.exitCode !== null || c.signalCode !== null),
      15_000,
    ).catch(() => undefined);
    await redis.quit();
    await auth.close();
  }
}

interface PhaseParams {
  readonly natsUrl: string;
  readonly authUrl: string;
  /** The swap asked for: sending asset → receiving asset. */
  readonly pool: {
    readonly sendingChainId: number;
    readonly sendingAssetId: string;
    readonly receivingChainId: number;
    readonly receivingAssetId: string;
  };
  readonly instances: number;
  readonly auctionPids: readonly number[];
  /** The router's other processes (BENCH_STACK=pm2), measured over the same phases; the PM2 daemon is kept apart. */
  readonly otherProcesses: ReadonlyArray<{ readonly name: string; readonly pid: number }>;
}

/** The client and the phases: warm-up, a 2 s idle pause, sequential, 50 in flight, burst; then the report. */
async function runPhases(p: PhaseParams): Promise<void> {
  const pids = p.auctionPids;
  const user = Wallet.createRandom();
  const messaging = await connectMessaging({
    servers: p.natsUrl,
    authUrl: p.authUrl,
    logger: createLogger({ level: "warn", service: "bench-client" }),
    signer: { getAddress: async () => user.address, signMessage: (m) => user.signMessage(m) },
  });
  const asker = createAsker(messaging);
  await messaging.flush();
  // Once: ethers' keccak is pure JS, and the client's CPU shares the cores with the router's.
  const emptyCallDataHash = keccak256("0x");
  const payload = (): Record<string, unknown> => {
    const u = hexlify(randomBytes(20));
    return {
      user: u,
      initiator: u,
      sendingChainId: p.pool.sendingChainId,
      sendingAssetId: p.pool.sendingAssetId,
      amount: "10000000000000000000",
      receivingChainId: p.pool.receivingChainId,
      receivingAssetId: p.pool.receivingAssetId,
      receivingAddress: u,
      callTo: ZeroAddress,
      callDataHash: emptyCallDataHash,
      encryptedCallData: "0x",
      expiry: Math.floor(Date.now() / 1000) + 3 * 86400 + 3 * 3600,
      transactionId: hexlify(randomBytes(32)),
      dryRun: process.env.BENCH_DRY_RUN === "1",
    };
  };
  const cpu = (): { total: number; sys: number } =>
    pids.reduce(
      (sum, pid) => {
        const { user, sys } = cpuMsOf(pid);
        return { total: sum.total + user + sys, sys: sum.sys + sys };
      },
      { total: 0, sys: 0 },
    );
  const clientCpuMs = (): number => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };

  const measure = async (name: string, run: (ask: () => Promise<number>) => Promise<void>): Promise<Phase> => {
    const latenciesMs: number[] = [];
    const ask = async (): Promise<number> => {
      const ms = await asker.ask(payload());
      latenciesMs.push(ms);
      return ms;
    };
    const cpuBefore = cpu();
    const clientBefore = clientCpuMs();
    const startedAt = performance.now();
    await run(ask);
    const wallMs = performance.now() - startedAt;
    const cpuAfter = cpu();
    return {
      name,
      latenciesMs,
      wallMs,
      cpuMs: cpuAfter.total - cpuBefore.total,
      sysMs: cpuAfter.sys - cpuBefore.sys,
      clientMs: clientCpuMs() - clientBefore,
    };
  };

  // Main thread vs the rest (V8's compiler and GC workers, libuv's pool), warm-up included.
  const threadsBefore = threadCpuMs(pids);
  const othersCpu = (): number[] =>
    p.otherProcesses.map(({ pid }) => {
      const { user, sys } = cpuMsOf(pid);
      return user + sys;
    });
  try {
    // 20 as the issue's client does; BENCH_WARMUP=2000 shows the steady state (JIT-compiled hot path).
    const warmUps = Number(process.env.BENCH_WARMUP ?? 20);
    await measure("warm-up", async (ask) => {
      for (let i = 0; i < warmUps; i += 1) await ask();
    });
    // What the auction processes burn with no request (refreshers, status and readiness loops): part of every
    // phase's CPU figure, so it is printed beside them.
    const idleBefore = cpu().total;
    const idleStartedAt = performance.now();
    await sleep(2_000);
    const idleMsPerSec = ((cpu().total - idleBefore) / (performance.now() - idleStartedAt)) * 1000;
    const othersBefore = othersCpu();
    const sequential = await measure("sequential (200)", async (ask) => {
      for (let i = 0; i < 200; i += 1) await ask();
    });
    const inFlight = await measure("50 in flight (200)", async (ask) => {
      let sent = 0;
      const worker = async (): Promise<void> => {
        while (sent < 200) {
          sent += 1;
          await ask();
        }
      };
      await Promise.all(Array.from({ length: 50 }, worker));
    });
    const burst = await measure("burst (50)", async (ask) => {
      await Promise.all(Array.from({ length: 50 }, ask));
    });
    const othersAfter = othersCpu();
    const figures = report([sequential, inFlight, burst], p.instances, idleMsPerSec);
    if (p.otherProcesses.length > 0) {
      const measured = [sequential, inFlight, burst];
      const bids = measured.reduce((n, ph) => n + ph.latenciesMs.length, 0);
      const perBid = p.otherProcesses.map(({ name }, i) => ({ name, ms: (othersAfter[i] - othersBefore[i]) / bids }));
      const routerOthers = perBid.filter((o) => o.name !== PM2_DAEMON).reduce((sum, o) => sum + o.ms, 0);
      const auctions = measured.reduce((sum, ph) => sum + ph.cpuMs, 0) / bids;
      process.stdout.write(
        `  other processes over the same phases (ms per bid): ${perBid.map((o) => `${o.name} ${o.ms.toFixed(2)}`).join(", ")}\n` +
          `  every router process (auctions + the others, PM2's daemon apart): ${(auctions + routerOthers).toFixed(2)} ms per bid\n`,
      );
    }
    const threadsAfter = threadCpuMs(pids);
    const bids = 20 + 200 + 200 + 50 + warmUps - 20;
    const split = [...threadsAfter]
      .map(([name, ms]) => [name, ms - (threadsBefore.get(name) ?? 0)] as const)
      .filter(([, ms]) => ms > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([name, ms]) => `${name} ${(ms / bids).toFixed(2)}`);
    process.stdout.write(`  by thread, warm-up included (ms per bid): ${split.join(", ")}\n`);
    printFigures("auction", figures);
  } finally {
    await messaging.close();
  }
}

/** Publishes requests and resolves with the publish→reply latency when the bid for its inbox arrives. */
function createAsker(messaging: Messaging): { ask(data: unknown): Promise<number> } {
  const waiting = new Map<string, { resolve: (ms: number) => void; sentAt: number; timer: NodeJS.Timeout }>();
  messaging.onResponse("auction", (response) => {
    const entry = response.responseInbox === null ? undefined : waiting.get(response.responseInbox);
    if (entry) {
      const ms = performance.now() - entry.sentAt;
      clearTimeout(entry.timer);
      waiting.delete(response.responseInbox as string);
      entry.resolve(ms);
    }
  });
  return {
    ask: (data) =>
      new Promise((resolve, reject) => {
        const inbox = `_INBOX.${randomUUID()}`;
        const timer = setTimeout(() => {
          waiting.delete(inbox);
          reject(new Error("no bid within 10 s (a refusal? run with the auction's logs to see its code)"));
        }, 10_000);
        waiting.set(inbox, { resolve, sentAt: performance.now(), timer });
        messaging.request("auction", data, inbox);
      }),
  };
}

/** Prints the phases' figures and returns them by name (support.ts printFigures, bench/compare.ts). */
function report(phases: readonly Phase[], instances: number, idleMsPerSec: number): BenchFigures {
  const lines = [`auction processes: ${instances}`];
  const figures: Record<string, number> = {};
  for (const phase of phases) {
    const sorted = [...phase.latenciesMs].sort((a, b) => a - b);
    const pct = (q: number): number => percentile(sorted, q);
    const bids = sorted.length;
    const phaseName = phase.name.replace(/ \(\d+\)$/, "");
    figures[`${phaseName}: p50 ms`] = pct(0.5);
    figures[`${phaseName}: p99 ms`] = pct(0.99);
    figures[`${phaseName}: bids/s`] = (bids / phase.wallMs) * 1000;
    figures[`${phaseName}: CPU ms/bid`] = phase.cpuMs / bids;
    lines.push(
      `${phase.name}: p50 ${pct(0.5).toFixed(2)} ms, p99 ${pct(0.99).toFixed(2)} ms, max ${sorted[bids - 1].toFixed(2)} ms, ` +
        `${((bids / phase.wallMs) * 1000).toFixed(0)} bids/s, CPU ${(phase.cpuMs / bids).toFixed(2)} ms/bid`,
    );
    const original = phase.name.startsWith("sequential")
      ? ORIGINAL.sequential
      : phase.name.startsWith("50")
        ? ORIGINAL.inFlight50
        : undefined;
    if (original) {
      const ratio = (ours: number, [lo, hi]: number[]): string =>
        `${(lo / ours).toFixed(1)}–${(hi / ours).toFixed(1)}× faster`;
      lines.push(
        `  vs original (p50 ${original.p50.join("–")} ms, p99 ${original.p99.join("–")} ms): p50 ${ratio(pct(0.5), original.p50)}, p99 ${ratio(pct(0.99), original.p99)}`,
      );
    }
  }
  const cpuTotal = phases.reduce((s, ph) => s + ph.cpuMs, 0);
  const bidsTotal = phases.reduce((s, ph) => s + ph.latenciesMs.length, 0);
  const perBid = cpuTotal / bidsTotal;
  const sysPerBid = phases.reduce((s, ph) => s + ph.sysMs, 0) / bidsTotal;
  const clientPerBid = phases.reduce((s, ph) => s + ph.clientMs, 0) / bidsTotal;
  lines.push(
    `CPU per bid over all measured phases, summed over every router (auction) process: ${perBid.toFixed(2)} ms, ` +
      `of which kernel ${sysPerBid.toFixed(2)} ms (original ~${ORIGINAL.cpuMsPerBid} ms: ${(ORIGINAL.cpuMsPerBid / perBid).toFixed(1)}× less)`,
    `  bench client on the same cores: ${clientPerBid.toFixed(2)} ms per bid; auction processes with no request: ${idleMsPerSec.toFixed(1)} ms CPU/s`,
  );
  process.stdout.write(`${lines.join("\n")}\n`);
  figures["all phases: CPU ms/bid"] = perBid;
  return figures;
}

/** utime + stime of the main thread and of all the others, summed over `pids`, in ms. */
function threadCpuMs(pids: readonly number[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of pids) {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        // Node names every thread "node": the main thread is the one whose id is the process id.
        const name = tid === String(pid) ? "main" : "other threads (V8 compiler and GC, libuv)";
        const { user, sys } = cpuMsOf(pid, tid);
        out.set(name, (out.get(name) ?? 0) + user + sys);
      } catch {
        // The thread ended between the listing and the read.
      }
    }
  }
  return out;
}

/** utime and stime of a process, in ms (clock ticks of 10 ms: phases of 200 bids make that precise enough). */
function cpuMsOf(pid: number, tid?: string): { user: number; sys: number } {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, "utf8");
  // Field 2 (comm) may contain spaces; the fields after its closing parenthesis start at field 3.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: (Number(fields[11]) * 1000) / CLK_TCK, sys: (Number(fields[12]) * 1000) / CLK_TCK };
}

async function deploy(deployer: Signer, name: NxtpContractName, args: unknown[]): Promise<Contract> {
  const { abi, bytecode } = packageArtifact(name);
  const c = await new ContractFactory(abi, bytecode, deployer).deploy(...args);
  await c.waitForDeployment();
  return new Contract(await c.getAddress(), abi, deployer);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);

/**
 * `npm run bench:recovery`: how fast each role of the router is back at work after a SIGKILL, under
 * PM2 with ecosystem.config.js on local anvil chains (the stack of `npm run local`, in a temporary directory of
 * its own: .local/ is never touched). Swaps of 10 TEST 1337 → 1338 run continuously from three users, the way
 * an SDK user does them (auction over NATS, prepare, the router's prepare, fulfill, the router's claim). Each
 * role in turn is SIGKILLed 10 times, a kill every 3 s at the earliest, and the time from the kill to the role's
 * next unit of work is taken:
 *   submitter-1337 (sending chain)   the next router transaction mined on 1337 (confirmations 1)
 *   submitter-1338 (receiving chain) the next router transaction mined on 1338
 *   poller (1337 and 1338)           1337's next block cursor stored in Redis
 *   auction (1 instance, then 2)     the next bid answered to an auction request (asked every 100 ms)
 *   admin                            the next answered GET /ping (asked every 25 ms)
 * Swap durations are reported without kills (a first phase) and under the kills. A benchmark, not a test: it
 * prints the figures beside their targets and exits 0 unless the stack could not run.
 */
import { randomUUID } from "node:crypto";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet, ZeroAddress, getAddress, hexlify, keccak256, parseEther, randomBytes } from "ethers";
import { Redis } from "ioredis";
import { anvilWallet } from "../scripts/local/anvil-accounts";
import {
  LOCAL_CHAIN_IDS,
  MAINNET_CHAIN_ID,
  RECEIVING_CHAIN_ID,
  SENDING_CHAIN_ID,
  deployLocalChains,
  fundLocalChains,
  fundUser,
  type LocalChainHandle,
} from "../scripts/local/chains";
import { demoChainOf, runDemoSwap, waitForAuctionStatus, type DemoSwapResult } from "../scripts/local/demo-swap";
import { nxtpContractAt, sendTx } from "../scripts/local/deploy-nxtp";
import { getFreePort } from "../scripts/local/free-port";
import {
  LOCAL_REDIS_PREFIX,
  LOCAL_ROUTER_APPS,
  freshRouterSigner,
  localChainOf,
  localConfigJson,
} from "../scripts/local/local-config";
import { localPaths, type LocalPaths } from "../scripts/local/paths";
import { pm2Env, runPm2, waitForApps } from "../scripts/local/pm2";
import { createPostgresDatabase } from "../scripts/local/postgres";
import { anvilSpec, authSpec, natsSpec, postgresSpec, redisSpec, startServer } from "../scripts/local/servers";
import { emptyState, type LocalProcess, type LocalState } from "../scripts/local/state";
import { stopLocalStack } from "../scripts/local/stop-stack";
import { createLogger } from "../shared/logging/create-logger";
import { connectMessaging, type Messaging } from "../shared/messaging";
import { pollUntil, sleep } from "../shared/timing";
import { createTransferStore } from "../shared/transfers/transfer-store";
import { isAlive } from "../scripts/local/detached";
import { percentile, runBench } from "./support";

const KILLS_PER_ROLE = Number(process.env.BENCH_KILLS ?? 10);
const KILL_EVERY_MS = 3_000;
const BASELINE_MS = Number(process.env.BENCH_BASELINE_MS ?? 30_000);
const SWAP_WORKERS = 3;
const SWAP_AMOUNT_WEI = parseEther("10");
const UNIT_TIMEOUT_MS = 30_000;
const APP_BACK_TIMEOUT_MS = 30_000;

interface Role {
  readonly label: string;
  /** PM2 app name. */
  readonly app: string;
  readonly targetMs: number;
  /** Resolves with the wall-clock time of the role's first unit of work after `killedAtMs`. */
  nextUnit(killedAtMs: number): Promise<number>;
}

export interface Stack {
  readonly paths: LocalPaths;
  readonly chains: Map<number, LocalChainHandle>;
  readonly router: string;
  readonly adminUrl: string;
  readonly natsUrl: string;
  readonly authUrl: string;
  readonly redisUrl: string;
  state(): LocalState;
}

const log = (line: string): void => void process.stdout.write(`${line}\n`);

// ---- the stack: npm run local's parts, in a directory of the bench's own -------------------------------

/** Closes the stack's chain providers, stops what startStack started and removes `dir`; a failed stop is logged. */
export async function stopStack(s: Stack, dir: string, log: (line: string) => void): Promise<void> {
  for (const c of s.chains.values()) c.provider.destroy();
  log("stopping the stack…");
  await stopLocalStack(s.paths, s.state(), () => undefined).catch((err: unknown) =>
    log(`clean-up failed: ${String(err)}; see ${dir}`),
  );
  rmSync(dir, { recursive: true, force: true });
}

/**
 * npm run local's stack (scripts/local), in `dir`; on a failure, stops what it started before rethrowing.
 * `auctionInstances` defaults to 1 (see startRouterApps). `ledger`: a PostgreSQL too, and the ledger app with it
 * (the config's ledger section); without it the config has none and PM2 starts no ledger.
 */
export async function startStack(
  dir: string,
  opts: { auctionInstances?: number; ledger?: boolean } = {},
): Promise<Stack> {
  const paths = benchPaths(dir);
  mkdirSync(paths.logDir, { recursive: true });
  let state = emptyState(process.pid, Date.now());
  const add = (p: LocalProcess): void => {
    state = { ...state, processes: [...state.processes, p] };
  };
  const forget = (pid: number): void => {
    state = { ...state, processes: state.processes.filter((p) => p.pid !== pid) };
  };
  try {
    const servers = await startServers(paths, add, forget, opts.ledger ?? false);
    const { address: router, mnemonic } = freshRouterSigner();
    const chains = await deployLocalChains(servers.rpcUrls, router);
    await fundLocalChains(chains, router);
    const adminPort = await getFreePort();
    writeRouterConfig(paths, servers, chains, { mnemonic, adminPort });
    state = { ...state, pm2Home: paths.pm2Home, configFile: paths.configFile };
    await startRouterApps(paths, servers, opts.auctionInstances ?? 1);
    const { redisUrl, natsUrl, authUrl } = servers;
    const adminUrl = `http://127.0.0.1:${adminPort}`;
    return { paths, chains, router, adminUrl, redisUrl, natsUrl, authUrl, state: () => state };
  } catch (err) {
    await stopLocalStack(paths, state, log).catch(() => undefined);
    throw err;
  }
}

/** npm run local's paths, except that everything it writes goes to `dir`. */
function benchPaths(dir: string): LocalPaths {
  return {
    ...localPaths(),
    dir,
    stateFile: join(dir, "state.json"),
    configFile: join(dir, "config.json"),
    logDir: join(dir, "logs"),
    pm2Home: join(dir, "pm2"),
  };
}

interface StackServers {
  readonly rpcUrls: ReadonlyMap<number, string>;
  readonly redisUrl: string;
  readonly natsUrl: string;
  readonly authUrl: string;
  /** Set when the stack runs the ledger. */
  readonly ledgerDatabaseUrl?: string;
}

/** Anvil ×3, redis-server, nats-server, the messaging auth service, and PostgreSQL for a ledger. */
async function startServers(
  paths: LocalPaths,
  add: (p: LocalProcess) => void,
  forget: (pid: number) => void,
  ledger: boolean,
): Promise<StackServers> {
  const [anvils, redis, nats, auth, postgres] = await Promise.all([
    Promise.all(LOCAL_CHAIN_IDS.map((id) => startServer(paths, anvilSpec(id), add, forget))),
    startServer(paths, redisSpec(log), add, forget),
    startServer(paths, natsSpec(log), add, forget),
    startServer(paths, authSpec(paths), add, forget),
    ledger ? startServer(paths, postgresSpec(paths, log, "bench"), add, forget) : Promise.resolve(undefined),
  ]);
  return {
    rpcUrls: new Map(LOCAL_CHAIN_IDS.map((id, i) => [id as number, `http://127.0.0.1:${anvils[i].port}`])),
    redisUrl: `redis://127.0.0.1:${redis.port}`,
    natsUrl: `nats://127.0.0.1:${nats.port}`,
    authUrl: `http://127.0.0.1:${auth.port}`,
    ...(postgres ? { ledgerDatabaseUrl: await createPostgresDatabase(postgres.port ?? 0, "router_ledger") } : {}),
  };
}

function writeRouterConfig(
  paths: LocalPaths,
  servers: StackServers,
  chains: Map<number, LocalChainHandle>,
  p: { mnemonic: string; adminPort: number },
): void {
  const chain = (id: number): LocalChainHandle => chains.get(id) as LocalChainHandle;
  const raw = localConfigJson({
    mnemonic: p.mnemonic,
    adminToken: hexlify(randomBytes(24)).slice(2),
    adminPort: p.adminPort,
    redisUrl: servers.redisUrl,
    messagingUrl: servers.natsUrl,
    authUrl: servers.authUrl,
    ledgerDatabaseUrl: servers.ledgerDatabaseUrl,
    mainnet: localChainOf(chain(MAINNET_CHAIN_ID)),
    swapChains: [localChainOf(chain(SENDING_CHAIN_ID)), localChainOf(chain(RECEIVING_CHAIN_ID))],
  });
  writeFileSync(paths.configFile, JSON.stringify(raw, null, 2), { mode: 0o600 });
}

/** Every router app under PM2, until each is online and the auction answers a status request. */
async function startRouterApps(paths: LocalPaths, servers: StackServers, auctionInstances: number): Promise<void> {
  // bench:recovery starts one auction (ecosystem.config.js defaults to two): the lone-instance phase runs before
  // the one that scales the auction to 2, which is how many the "auction (2 instances)" figure is for.
  process.env.AUCTION_INSTANCES = String(auctionInstances);
  const started = runPm2(paths, ["start", paths.ecosystemFile]);
  if (started.status !== 0)
    throw new Error(`pm2 start exited ${String(started.status)}: ${started.output.slice(-2000)}`);
  // npm run local's apps; the ledger only where the config has its section.
  const apps = LOCAL_ROUTER_APPS.filter((app) => app !== "ledger" || servers.ledgerDatabaseUrl !== undefined);
  await waitForApps(paths, apps, 120_000, () => undefined);
  await waitForAuctionStatus({ messagingUrl: servers.natsUrl, authUrl: servers.authUrl }, 60_000);
}

/** One swap by `user` through the stack, the way an SDK user does it (scripts/local/demo-swap.ts), printing nothing. */
export function swapOnStack(
  s: Stack,
  user: Wallet,
  amountWei: bigint,
  stepTimeoutMs: number,
  onPrepared?: (who: "user" | "router", atMs: number) => void,
): Promise<DemoSwapResult> {
  const chain = (id: number): LocalChainHandle => s.chains.get(id) as LocalChainHandle;
  return runDemoSwap({
    messagingUrl: s.natsUrl,
    authUrl: s.authUrl,
    sending: demoChainOf(chain(SENDING_CHAIN_ID)),
    receiving: demoChainOf(chain(RECEIVING_CHAIN_ID)),
    user,
    router: s.router,
    amountWei,
    print: () => undefined,
    routerStepTimeoutMs: stepTimeoutMs,
    bidTimeoutMs: stepTimeoutMs,
    onPrepared,
  });
}

/** `count` new users with gas on both swap chains and TEST on the sending chain (plus `extraTokenWei` minted). */
export async function fundBenchUsers(s: Stack, count: number, extraTokenWei = 0n): Promise<Wallet[]> {
  const sending = s.chains.get(SENDING_CHAIN_ID) as LocalChainHandle;
  const receiving = s.chains.get(RECEIVING_CHAIN_ID) as LocalChainHandle;
  const users = Array.from({ length: count }, () => new Wallet(Wallet.createRandom().privateKey));
  for (const user of users) {
    await fundUser(sending, user, true);
    await fundUser(receiving, user, false);
    if (extraTokenWei > 0n) {
      const token = nxtpContractAt("TestERC20", sending.deployment.token, anvilWallet(3, sending.provider));
      await sendTx(token, "mint", [user.address, extraTokenWei]);
    }
  }
  return users;
}

// ---- PM2 pids, from `pm2 jlist` run asynchronously (never between a kill and its unit of work) ---------------

async function appPids(paths: LocalPaths, app: string): Promise<number[]> {
  const output = await new Promise<string>((resolve) =>
    execFile(
      paths.pm2Bin,
      ["jlist"],
      { cwd: paths.root, env: pm2Env(paths), maxBuffer: 64 * 1024 * 1024 },
      (_err, stdout) => resolve(String(stdout)),
    ),
  );
  const start = output.indexOf("[");
  if (start < 0) return [];
  const list = JSON.parse(output.slice(start)) as Array<{
    name: string;
    pid: number;
    pm_id: number;
    pm2_env?: { status?: string };
  }>;
  return list
    .filter((a) => a.name === app && a.pm2_env?.status === "online" && a.pid > 0)
    .sort((x, y) => x.pm_id - y.pm_id)
    .map((a) => a.pid);
}

// ---- units of work ------------------------------------------------------------------------------------

/** Wall-clock time each router transaction was first seen mined, per chain (blocks read every 25 ms). */
function watchRouterTxs(
  chains: readonly LocalChainHandle[],
  router: string,
): { seen: Map<number, number[]>; stop(): Promise<void> } {
  const seen = new Map<number, number[]>(chains.map((c) => [c.chainId, []]));
  let running = true;
  const watchOne = async (c: LocalChainHandle): Promise<void> => {
    let next = (await c.provider.getBlockNumber()) + 1;
    while (running) {
      const head = await c.provider.getBlockNumber().catch(() => next - 1);
      for (; next <= head; next += 1) {
        const block = await c.provider.getBlock(next, true);
        const now = Date.now();
        for (const tx of block?.prefetchedTransactions ?? []) {
          if (getAddress(tx.from) === getAddress(router)) seen.get(c.chainId)?.push(now);
        }
      }
      await sleep(25);
    }
  };
  const loops = chains.map((c) => watchOne(c));
  return {
    seen,
    stop: async () => {
      running = false;
      await Promise.allSettled(loops);
    },
  };
}

interface BidProbe {
  /** Asks for a bid every 100 ms from `sinceMs`; resolves when one answers. */
  nextBid(sinceMs: number): Promise<number>;
  close(): Promise<void>;
}

async function startBidProbe(s: Stack): Promise<BidProbe> {
  const key = Wallet.createRandom();
  const messaging: Messaging = await connectMessaging({
    servers: s.natsUrl,
    authUrl: s.authUrl,
    signer: { getAddress: async () => key.address, signMessage: (m) => key.signMessage(m) },
    logger: createLogger({ level: "silent", service: "bench-recovery" }),
  });
  const bids = new Map<string, number>();
  messaging.onResponse("auction", (r) => {
    const data = r.data as { bidSignature?: unknown } | null;
    if (r.responseInbox && typeof data?.bidSignature === "string" && !bids.has(r.responseInbox))
      bids.set(r.responseInbox, Date.now());
  });
  await messaging.flush();
  const sending = s.chains.get(SENDING_CHAIN_ID) as LocalChainHandle;
  const receiving = s.chains.get(RECEIVING_CHAIN_ID) as LocalChainHandle;
  return {
    nextBid: async (sinceMs) => {
      const asked: string[] = [];
      return pollUntil(
        "a bid",
        () => {
          const answered = asked.map((i) => bids.get(i)).find((t) => t !== undefined && t > sinceMs);
          if (answered !== undefined) return answered;
          const user = Wallet.createRandom().address;
          const inbox = `_INBOX.${randomUUID()}`;
          asked.push(inbox);
          messaging.request(
            "auction",
            {
              user,
              initiator: user,
              sendingChainId: SENDING_CHAIN_ID,
              sendingAssetId: sending.deployment.token,
              amount: SWAP_AMOUNT_WEI.toString(),
              receivingChainId: RECEIVING_CHAIN_ID,
              receivingAssetId: receiving.deployment.token,
              receivingAddress: user,
              callTo: ZeroAddress,
              callDataHash: keccak256("0x"),
              encryptedCallData: "0x",
              expiry: Math.floor(Date.now() / 1000) + 3 * 86_400 + 3 * 3_600,
              transactionId: hexlify(randomBytes(32)),
              dryRun: false,
            },
            inbox,
          );
          return undefined;
        },
        UNIT_TIMEOUT_MS,
        100,
      );
    },
    close: () => messaging.close(),
  };
}

// ---- swaps -------------------------------------------------------------------------------------------

interface SwapRecord {
  readonly endedAtMs: number;
  readonly durationMs: number;
  readonly phase: string;
}

function startSwaps(
  s: Stack,
  users: readonly Wallet[],
  phase: () => string,
): { records: SwapRecord[]; failures: string[]; stop(): Promise<void> } {
  const records: SwapRecord[] = [];
  const failures: string[] = [];
  let running = true;
  const loops = users.map(async (user) => {
    while (running) {
      const startedPhase = phase();
      try {
        const result = await swapOnStack(s, user, SWAP_AMOUNT_WEI, 120_000);
        records.push({
          endedAtMs: Date.now(),
          durationMs: result.totalMs,
          // A swap belongs to the phase it started in, except one that started in the baseline and saw a kill.
          phase: startedPhase === "baseline" ? phase() : startedPhase,
        });
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
    }
  });
  return {
    records,
    failures,
    stop: async () => {
      running = false;
      await Promise.allSettled(loops);
    },
  };
}

// ---- figures -----------------------------------------------------------------------------------------

/** The `p`th percentile (0..100) of unsorted `values`. */
function percentileOf(values: readonly number[], p: number): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    p / 100,
  );
}

const fmtMs = (ms: number): string => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : "-");

// ---- main --------------------------------------------------------------------------------------------

async function killRole(s: Stack, role: Role, instance: number): Promise<number[]> {
  const figures: number[] = [];
  let lastKillMs = 0;
  for (let i = 0; i < KILLS_PER_ROLE; i += 1) {
    await sleep(Math.max(0, lastKillMs + KILL_EVERY_MS - Date.now()));
    const pids = await pollUntil(
      `${role.app} online`,
      async () => {
        const found = await appPids(s.paths, role.app);
        return found.length > instance && isAlive(found[instance]) ? found : undefined;
      },
      APP_BACK_TIMEOUT_MS,
    );
    const killedAtMs = Date.now();
    process.kill(pids[instance], "SIGKILL");
    lastKillMs = killedAtMs;
    try {
      const atMs = await role.nextUnit(killedAtMs);
      figures.push(atMs - killedAtMs);
    } catch (err) {
      log(`  ${role.label}: kill ${i + 1}: ${err instanceof Error ? err.message : String(err)}`);
      figures.push(Infinity);
    }
    // Back under PM2 (a new pid, alive) before the next kill: a kill of a process still starting proves nothing.
    await pollUntil(
      `${role.app} restarted`,
      async () => {
        const now = await appPids(s.paths, role.app);
        return now.length > instance && now[instance] !== pids[instance] && isAlive(now[instance]) ? true : undefined;
      },
      APP_BACK_TIMEOUT_MS,
    ).catch(() => log(`  ${role.label}: not restarted within ${APP_BACK_TIMEOUT_MS} ms`));
  }
  return figures;
}

/** A role as main kills it: which PM2 instance, and how many instances it must have first. */
type KilledRole = Role & { readonly instance: number; readonly instances?: number };

interface RoleResult {
  readonly label: string;
  readonly targetMs: number;
  readonly figures: number[];
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "bench-recovery-"));
  log(`bench:recovery: starting anvil ×3, redis, nats, auth and the router under PM2 in ${dir}`);
  const startedAtMs = Date.now();
  const s = await startStack(dir);
  log(`stack up in ${fmtMs(Date.now() - startedAtMs)}; admin ${s.adminUrl}`);
  const redis = new Redis(s.redisUrl, { maxRetriesPerRequest: null });
  const store = createTransferStore(redis, LOCAL_REDIS_PREFIX);
  const swapChains = [SENDING_CHAIN_ID, RECEIVING_CHAIN_ID].map((id) => s.chains.get(id) as LocalChainHandle);
  const watcher = watchRouterTxs(swapChains, s.router);
  const bidProbe = await startBidProbe(s);
  let phase = "baseline";
  let swaps: ReturnType<typeof startSwaps> | undefined;
  try {
    // fundUser gives 1 000 TEST; a long run needs more (10 TEST a swap).
    const users = await fundBenchUsers(s, SWAP_WORKERS, parseEther("100000"));
    const roles = recoveryRoles(s, { store, watcher, bidProbe });
    swaps = startSwaps(s, users, () => phase);
    log(`baseline: swaps without kills for ${BASELINE_MS / 1000} s (${SWAP_WORKERS} users)`);
    await sleep(BASELINE_MS);
    const results: RoleResult[] = [];
    for (const role of roles) {
      phase = "setup";
      await scaleTo(s, role);
      log(`${role.label}: ${KILLS_PER_ROLE} SIGKILLs, one every ${KILL_EVERY_MS / 1000} s at the earliest`);
      phase = role.label;
      const figures = await killRole(s, role, role.instance);
      log(`  kill → next unit of work: ${figures.map((f) => (Number.isFinite(f) ? String(f) : "none")).join(", ")} ms`);
      results.push({ label: role.label, targetMs: role.targetMs, figures });
    }
    phase = "done";
    await swaps.stop();
    printReport(results, swaps, roles);
    return 0;
  } finally {
    phase = "done";
    await swaps?.stop();
    await watcher.stop();
    await bidProbe.close().catch(() => undefined);
    redis.disconnect();
    await stopStack(s, dir, log);
  }
}

/** The roles in the order they are killed, each with its target and how its next unit of work is seen. */
function recoveryRoles(
  s: Stack,
  probes: {
    store: ReturnType<typeof createTransferStore>;
    watcher: ReturnType<typeof watchRouterTxs>;
    bidProbe: BidProbe;
  },
): KilledRole[] {
  const { store, watcher, bidProbe } = probes;
  const nextRouterTx = (chainId: number) => (killedAtMs: number) =>
    pollUntil(
      `a router transaction on ${chainId}`,
      () => watcher.seen.get(chainId)?.find((t) => t > killedAtMs),
      UNIT_TIMEOUT_MS,
    );
  return [
    {
      label: `submitter ${SENDING_CHAIN_ID} (sending chain)`,
      app: `submitter-${SENDING_CHAIN_ID}`,
      targetMs: 5_000,
      instance: 0,
      nextUnit: nextRouterTx(SENDING_CHAIN_ID),
    },
    {
      label: `submitter ${RECEIVING_CHAIN_ID} (receiving chain)`,
      app: `submitter-${RECEIVING_CHAIN_ID}`,
      targetMs: 5_000,
      instance: 0,
      nextUnit: nextRouterTx(RECEIVING_CHAIN_ID),
    },
    {
      // The one poller process of both swap chains (ecosystem.config.js): the sending chain's cursor is the unit.
      label: `poller ${SENDING_CHAIN_ID}+${RECEIVING_CHAIN_ID}`,
      app: "poller",
      targetMs: 5_000,
      instance: 0,
      nextUnit: (killedAtMs) =>
        pollUntil(
          "a stored cursor",
          async () => {
            const at = (await store.getHead(SENDING_CHAIN_ID))?.updatedAtMs;
            return at !== undefined && at > killedAtMs ? at : undefined;
          },
          UNIT_TIMEOUT_MS,
        ),
    },
    {
      label: "auction (1 instance)",
      app: "auction",
      targetMs: 3_000,
      instance: 0,
      nextUnit: (k) => bidProbe.nextBid(k),
    },
    {
      label: "auction (2 instances)",
      app: "auction",
      targetMs: 1_000,
      instance: 0,
      instances: 2,
      nextUnit: (k) => bidProbe.nextBid(k),
    },
    {
      label: "admin",
      app: "admin",
      targetMs: 5_000,
      instance: 0,
      nextUnit: (killedAtMs) =>
        pollUntil(
          "an answered /ping",
          async () => {
            const ok = await fetch(`${s.adminUrl}/ping`, { signal: AbortSignal.timeout(1_000) }).then(
              (r) => r.ok,
              () => false,
            );
            const now = Date.now();
            return ok && now > killedAtMs ? now : undefined;
          },
          UNIT_TIMEOUT_MS,
        ),
    },
  ];
}

/** Scales the role's app under PM2 to `role.instances` when it runs fewer, and waits until they all serve. */
async function scaleTo(s: Stack, role: KilledRole): Promise<void> {
  if (!role.instances || role.instances <= (await appPids(s.paths, role.app)).length) {
    return;
  }
  const scaled = await new Promise<number>((resolve) =>
    execFile(
      s.paths.pm2Bin,
      ["scale", role.app, String(role.instances)],
      { cwd: s.paths.root, env: pm2Env(s.paths) },
      (err) => resolve(err ? 1 : 0),
    ),
  );
  if (scaled !== 0) throw new Error(`pm2 scale ${role.app} ${role.instances} failed`);
  await pollUntil(
    `${role.instances} ${role.app} instances`,
    async () => ((await appPids(s.paths, role.app)).filter(isAlive).length >= (role.instances ?? 1) ? true : undefined),
    60_000,
    200,
  );
  await waitForAuctionStatus({ messagingUrl: s.natsUrl, authUrl: s.authUrl }, 60_000);
  await sleep(5_000); // the new instance warms its caches and subscribes
}

/** Each role's recovery figures against its target, then the swap durations without and under kills. */
function printReport(
  results: readonly RoleResult[],
  swaps: ReturnType<typeof startSwaps>,
  roles: readonly Role[],
): void {
  const baseline = swaps.records.filter((r) => r.phase === "baseline").map((r) => r.durationMs);
  const killPhases = new Set(roles.map((r) => r.label));
  const underKills = swaps.records.filter((r) => killPhases.has(r.phase)).map((r) => r.durationMs);
  log("");
  log(
    `bench:recovery — kill → the role's next unit of work (${KILLS_PER_ROLE} SIGKILLs per role, PM2 restart_delay 250 ms)`,
  );
  log(`  ${"role".padEnd(34)}${"p50".padStart(10)}${"max".padStart(10)}${"target (max)".padStart(14)}  verdict`);
  for (const r of results) {
    const max = Math.max(...r.figures);
    log(
      `  ${r.label.padEnd(34)}${fmtMs(percentileOf(r.figures, 50)).padStart(10)}${fmtMs(max).padStart(10)}${`≤ ${fmtMs(r.targetMs)}`.padStart(14)}  ${max <= r.targetMs ? "met" : "MISSED"}`,
    );
  }
  const p99Base = percentileOf(baseline, 99);
  const p99Kills = percentileOf(underKills, 99);
  log("");
  log(`swap duration (${SWAP_WORKERS} users, 10 TEST 1337 → 1338, auction to claim)`);
  log(`  without kills: ${baseline.length} swaps, p50 ${fmtMs(percentileOf(baseline, 50))}, p99 ${fmtMs(p99Base)}`);
  log(
    `  under kills:   ${underKills.length} swaps, p50 ${fmtMs(percentileOf(underKills, 50))}, p99 ${fmtMs(p99Kills)}  (target p99 ≤ 2 × ${fmtMs(p99Base)} = ${fmtMs(2 * p99Base)}: ${p99Kills <= 2 * p99Base ? "met" : "MISSED"})`,
  );
  for (const role of roles) {
    const d = swaps.records.filter((r) => r.phase === role.label).map((r) => r.durationMs);
    log(
      `    while killing ${role.label.padEnd(34)}${String(d.length).padStart(4)} swaps, p50 ${fmtMs(percentileOf(d, 50))}, p99 ${fmtMs(percentileOf(d, 99))}, max ${fmtMs(Math.max(...d))}`,
    );
  }
  log(
    `  failed swaps: ${swaps.failures.length}${swaps.failures.length ? ` (first: ${swaps.failures[0].slice(0, 200)})` : ""}`,
  );
}

if (require.main === module) {
  runBench("bench:recovery", main);
}

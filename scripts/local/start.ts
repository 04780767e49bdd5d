import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { Wallet, parseEther } from "ethers";
import { loadConfig } from "../../shared/config";
import {
  LOCAL_CHAIN_IDS,
  MAINNET_CHAIN_ID,
  RECEIVING_CHAIN_ID,
  SENDING_CHAIN_ID,
  deployLocalChains,
  fundLocalChains,
  type LocalChainHandle,
} from "./chains";
import { tailFile } from "./detached";
import { demoChainOf, runDemoSwap, waitForAuctionStatus } from "./demo-swap";
import { StepFailedError } from "./errors";
import { getFreePort } from "./free-port";
import {
  freshRouterSigner,
  localChainOf,
  localConfigJson,
  LOCAL_REDIS_PREFIX,
  LOCAL_ROUTER_APPS,
} from "./local-config";
import { localPaths, type LocalPaths } from "./paths";
import { pm2DaemonPid, runPm2Streaming, waitForApps } from "./pm2";
import { anvilSpec, authSpec, natsSpec, postgresSpec, redisSpec, startServer } from "./servers";
import { createPostgresDatabase } from "./postgres";
import { createSteps, type Steps } from "./steps";
import { emptyState, readState, writeState, type LocalProcess, type LocalState } from "./state";
import { stopLocalStack } from "./stop-stack";

/**
 * `npm run local`: the whole router on this machine, on loopback only, then one demo swap through it.
 * Three anvil chains (1 prices gas, 1337 → 1338 swap), redis-server, nats-server and the local messaging
 * auth service as detached processes; the real NXTP contracts; a config in .local/config.json; every router
 * process under the project's PM2 with PM2_HOME=.local/pm2. The stack keeps running after this exits 0;
 * `npm run local:stop` stops it. A second run first stops the stack of the previous one.
 *
 * Options (flags or environment): --redis-url=redis://… (LOCAL_REDIS_URL) and --nats-url=nats://…
 * (LOCAL_NATS_URL) reuse a running server instead of starting one.
 */
const DEMO_AMOUNT_WEI = parseEther("100");
const PM2_READY_TIMEOUT_MS = 90_000;
const AUCTION_STATUS_TIMEOUT_MS = 60_000;
const LOG_TAIL_LINES = 25;

interface Options {
  readonly redisUrl?: string;
  readonly natsUrl?: string;
}

export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Options {
  const flag = (name: string): string | undefined => {
    const prefix = `--${name}=`;
    return argv.find((a) => a.startsWith(prefix))?.slice(prefix.length);
  };
  const unknown = argv.filter((a) => !/^--(redis-url|nats-url)=/.test(a));
  if (unknown.length > 0) {
    throw new Error(
      `unknown argument(s): ${unknown.join(" ")} (known: --redis-url=redis://host:port, --nats-url=nats://host:port)`,
    );
  }
  const redisUrl = flag("redis-url") ?? env.LOCAL_REDIS_URL;
  const natsUrl = flag("nats-url") ?? env.LOCAL_NATS_URL;
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) {
    throw new Error(`--redis-url must be a redis:// URL, got ${JSON.stringify(redisUrl)}`);
  }
  if (natsUrl !== undefined && !/^nats:\/\//.test(natsUrl)) {
    throw new Error(`--nats-url must be a nats:// URL, got ${JSON.stringify(natsUrl)}`);
  }
  return { redisUrl: redisUrl || undefined, natsUrl: natsUrl || undefined };
}

/** The state file, kept current: every pid is written the moment it exists. */
function stateKeeper(paths: LocalPaths): {
  get(): LocalState;
  add(p: LocalProcess): void;
  forget(pid: number): void;
  set(patch: Partial<LocalState>): void;
} {
  let state = emptyState(process.pid, Date.now());
  const save = (): void => writeState(paths.stateFile, state);
  save();
  return {
    get: () => state,
    add: (proc) => {
      state = { ...state, processes: [...state.processes, proc] };
      save();
    },
    forget: (pid) => {
      state = { ...state, processes: state.processes.filter((p) => p.pid !== pid) };
      save();
    },
    set: (patch) => {
      state = { ...state, ...patch };
      save();
    },
  };
}

function preflight(paths: LocalPaths): void {
  const missing = ["admin", "auction", "submitter", "poller", "messaging-auth"]
    .map((s) => `dist/services/${s}/main.js`)
    .filter((f) => !existsSync(`${paths.root}/${f}`));
  if (missing.length > 0) {
    throw new Error(`${missing.join(", ")} missing: build first (npm run local builds; npm run build)`);
  }
  if (!existsSync(paths.pm2Bin)) {
    throw new Error(`${paths.pm2Bin} missing: run npm ci`);
  }
}

interface LocalRun {
  readonly paths: LocalPaths;
  readonly options: Options;
  readonly steps: Steps;
  readonly keeper: ReturnType<typeof stateKeeper>;
}

type Servers = Awaited<ReturnType<typeof startServers>>;
type Chains = Awaited<ReturnType<typeof deployAndFund>>;

/** Paths as the user typed them: relative to where `npm run local` runs. */
const rel = (p: string): string => relative(process.cwd(), p) || ".";

/** The steps of `npm run local`, in order; each helper below is one part of the walk. */
async function run(r: LocalRun): Promise<void> {
  const servers = await startServers(r);
  const { chains, router, user, mnemonic } = await deployAndFund(r, servers);
  const { adminPort, expectedApps } = await startRouter(r, servers, chains, mnemonic);
  await demoSwap(r, servers, chains, router, user);
  printNextSteps(r, servers, chains, { router, user, adminPort, appCount: expectedApps.length });
}

/** Anvil ×3, redis-server, nats-server (unless reused), PostgreSQL for the ledger and the messaging auth service. */
async function startServers({ paths, options, steps, keeper }: LocalRun) {
  return steps.run(
    "Starting anvil ×3, redis-server, nats-server, postgres and the messaging auth service",
    async (progress) => {
      const start = async (spec: Parameters<typeof startServer>[1]): Promise<LocalProcess> => {
        const proc = await startServer(paths, spec, keeper.add, keeper.forget);
        progress(`${proc.name} ready on 127.0.0.1:${proc.port} (pid ${proc.pid})`);
        return proc;
      };
      // Programs first: a missing package fails the step before anything runs.
      const redisToStart = options.redisUrl ? undefined : redisSpec(progress);
      const natsToStart = options.natsUrl ? undefined : natsSpec(progress);
      const postgresToStart = postgresSpec(paths, progress);
      const [anvils, redis, nats, auth, postgres] = await Promise.all([
        Promise.all(LOCAL_CHAIN_IDS.map((id) => start(anvilSpec(id)))),
        redisToStart ? start(redisToStart) : Promise.resolve(undefined),
        natsToStart ? start(natsToStart) : Promise.resolve(undefined),
        start(authSpec(paths)),
        start(postgresToStart),
      ]);
      const ledgerDatabaseUrl = await createPostgresDatabase(postgres.port ?? 0, "router_ledger");
      if (options.redisUrl) progress(`reusing redis at ${options.redisUrl}`);
      if (options.natsUrl) progress(`reusing nats at ${options.natsUrl}`);
      return {
        rpcUrls: new Map(LOCAL_CHAIN_IDS.map((id, i) => [id as number, `http://127.0.0.1:${anvils[i].port}`])),
        redisUrl: options.redisUrl ?? `redis://127.0.0.1:${redis?.port}`,
        natsUrl: options.natsUrl ?? `nats://127.0.0.1:${nats?.port}`,
        authUrl: `http://127.0.0.1:${auth.port}`,
        ledgerDatabaseUrl,
      };
    },
  );
}

/** The NXTP contracts on the three chains, prices on chain 1, the router's gas and liquidity, the demo user. */
async function deployAndFund({ steps, keeper }: LocalRun, servers: Servers) {
  const { address: router, mnemonic } = freshRouterSigner();
  const user = new Wallet(Wallet.createRandom().privateKey);
  const anvilLogs = (): string[] =>
    keeper
      .get()
      .processes.filter((p) => p.name.startsWith("anvil"))
      .map((p) => p.logFile);

  const chains = await steps.run(
    "Deploying the NXTP contracts and a test token on chains 1, 1337 and 1338",
    (progress) => deployLocalChains(servers.rpcUrls, router, progress),
    anvilLogs,
  );
  await steps.run(
    "Pricing TEST and ETH on chain 1, funding the router (gas, TEST and ETH liquidity) and the demo user",
    (progress) => fundLocalChains(chains, router, { user, progress }),
    anvilLogs,
  );

  return { chains, router, user, mnemonic };
}

/** The config file, every router process under the project's PM2, and the auction answering over NATS. */
async function startRouter(
  { paths, options, steps, keeper }: LocalRun,
  servers: Servers,
  chains: Chains["chains"],
  mnemonic: string,
) {
  const chain = (id: number): LocalChainHandle => chains.get(id) as LocalChainHandle;
  const adminPort = await getFreePort();
  const adminToken = randomBytes(24).toString("hex");
  await steps.run("Writing the router config", async (progress) => {
    const raw = localConfigJson({
      mnemonic,
      adminToken,
      adminPort,
      redisUrl: servers.redisUrl,
      messagingUrl: servers.natsUrl,
      authUrl: servers.authUrl,
      ledgerDatabaseUrl: servers.ledgerDatabaseUrl,
      mainnet: localChainOf(chain(MAINNET_CHAIN_ID)),
      swapChains: [localChainOf(chain(SENDING_CHAIN_ID)), localChainOf(chain(RECEIVING_CHAIN_ID))],
    });
    // A reused redis may hold a previous run's keys (cursors of chains that no longer exist): one prefix per run.
    const withPrefix = options.redisUrl
      ? { ...raw, redisPrefix: `${LOCAL_REDIS_PREFIX}-${Date.now().toString(36)}` }
      : raw;
    loadConfig(withPrefix, {}); // refuses here, with every problem listed, rather than in eight processes
    writeFileSync(paths.configFile, `${JSON.stringify(withPrefix, null, 2)}\n`, { mode: 0o600 });
    keeper.set({ configFile: paths.configFile });
    progress(`${rel(paths.configFile)} (network local, mode 600; holds the signer's mnemonic and the admin token)`);
  });

  const expectedApps = LOCAL_ROUTER_APPS;
  await steps.run(
    `Starting the router under PM2 (PM2_HOME=${rel(paths.pm2Home)}): ${expectedApps.join(", ")}`,
    async (progress) => {
      keeper.set({ pm2Home: paths.pm2Home });
      const started = await runPm2Streaming(paths, ["start", paths.ecosystemFile], progress);
      if (started.status !== 0) {
        throw new Error(
          `pm2 start exited ${String(started.status)}:\n${started.output.trim().split("\n").slice(-10).join("\n")}`,
        );
      }
      progress(`PM2 daemon pid ${pm2DaemonPid(paths) ?? "?"}`);
      const apps = await waitForApps(paths, expectedApps, PM2_READY_TIMEOUT_MS, progress);
      progress(`online: ${apps.map((a) => `${a.name}(${a.pid})`).join(", ")}`);
    },
    () => [`${paths.logDir}/auction.error.log`],
  );

  await steps.run(
    "Waiting for the auction to answer a status request over NATS",
    async (progress) => {
      const status = await waitForAuctionStatus(
        { messagingUrl: servers.natsUrl, authUrl: servers.authUrl },
        AUCTION_STATUS_TIMEOUT_MS,
      );
      progress(`router ${String(status.routerAddress)} serves chains ${JSON.stringify(status.supportedChains)}`);
    },
    () => [`${paths.logDir}/auction.out.log`, `${paths.logDir}/auction.error.log`],
  );

  return { adminPort, expectedApps };
}

/** One 100 TEST swap through the router, printed step by step. */
async function demoSwap(
  { paths, steps }: LocalRun,
  servers: Servers,
  chains: Chains["chains"],
  router: string,
  user: Wallet,
) {
  const chain = (id: number): LocalChainHandle => chains.get(id) as LocalChainHandle;
  await steps.run(
    `Demo swap: 100 TEST from ${SENDING_CHAIN_ID} to ${RECEIVING_CHAIN_ID} for user ${user.address}`,
    async () => {
      await runDemoSwap({
        messagingUrl: servers.natsUrl,
        authUrl: servers.authUrl,
        sending: demoChainOf(chain(SENDING_CHAIN_ID)),
        receiving: demoChainOf(chain(RECEIVING_CHAIN_ID)),
        user,
        router,
        amountWei: DEMO_AMOUNT_WEI,
        print: steps.print,
      });
    },
    () => [
      `${paths.logDir}/auction.out.log`,
      `${paths.logDir}/submitter-${RECEIVING_CHAIN_ID}.out.log`,
      `${paths.logDir}/${LOCAL_ROUTER_APPS.includes("poller") ? "poller" : `poller-${SENDING_CHAIN_ID}`}.out.log`,
      `${paths.logDir}/submitter-${SENDING_CHAIN_ID}.out.log`,
    ],
  );
  for (const c of chains.values()) c.provider.destroy();
}

/** Where everything runs, the admin API calls to try, and where the logs are. */
function printNextSteps(
  { paths, steps, keeper }: LocalRun,
  servers: Servers,
  chains: Chains["chains"],
  p: { router: string; user: Wallet; adminPort: number; appCount: number },
): void {
  const { router, user, adminPort } = p;
  const chain = (id: number): LocalChainHandle => chains.get(id) as LocalChainHandle;
  const admin = `http://127.0.0.1:${adminPort}`;
  const state = keeper.get();
  keeper.set({
    urls: {
      admin,
      redis: servers.redisUrl,
      nats: servers.natsUrl,
      auth: servers.authUrl,
      ledger: servers.ledgerDatabaseUrl,
      ...Object.fromEntries([...servers.rpcUrls].map(([id, url]) => [`chain-${id}`, url])),
    },
  });
  const pm2 = `PM2_HOME=${rel(paths.pm2Home)} npx pm2`;
  const lines = [
    "",
    `The local stack is up (${(steps.elapsedMs() / 1000).toFixed(1)} s) and keeps running until \`npm run local:stop\`.`,
    `  chains     ${[...servers.rpcUrls].map(([id, url]) => `${id}: ${url}`).join("   ")}`,
    `  redis      ${servers.redisUrl}     nats ${servers.natsUrl}     auth ${servers.authUrl}`,
    `  ledger     ${servers.ledgerDatabaseUrl} (PostgreSQL; GET /ledger/<transactionId> after the demo swap)`,
    `  router     signer ${router}; config ${rel(paths.configFile)}; ${state.processes.length} servers + ${p.appCount} PM2 apps`,
    "",
    "Admin API (the admin token is in the config file):",
    `  curl ${admin}/ping`,
    `  curl ${admin}/config`,
    `  TOKEN=$(node -p 'require("./${rel(paths.configFile)}").adminToken')`,
    `  curl -X POST ${admin}/remove-liquidity -H 'content-type: application/json' \\`,
    `    -d '{"adminToken":"'"$TOKEN"'","chainId":"${RECEIVING_CHAIN_ID}","assetId":"${chain(RECEIVING_CHAIN_ID).deployment.token}",` +
      `"amount":"1000000000000000000","recipientAddress":"${user.address}"}'`,
    `  curl -u ":$TOKEN" ${admin}/status          # the whole router: processes, heads, queues, liquidity, gas`,
    `  queue dashboard: ${admin}/admin/queues (any user name, the admin token as password)`,
    "",
    "Logs:",
    `  ${pm2} status          ${pm2} logs [auction|submitter-1338|…]`,
    `  ${rel(paths.logDir)}/<app>.out.log and <app>.error.log (router processes), ${rel(paths.logDir)}/<server>.log (anvil, redis, nats, auth)`,
    "",
    "Stop everything this started: npm run local:stop",
  ];
  for (const line of lines) steps.print(line);
}

async function main(): Promise<number> {
  const paths = localPaths();
  const steps = createSteps();
  let options: Options;
  try {
    options = parseOptions(process.argv.slice(2), process.env);
    preflight(paths);
  } catch (err) {
    process.stderr.write(`npm run local: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  mkdirSync(paths.dir, { recursive: true });

  const previous = readState(paths.stateFile);
  if (previous || pm2DaemonPid(paths) !== undefined) {
    await steps.run("Stopping the stack of the previous npm run local", async (progress) => {
      await stopLocalStack(paths, previous, progress);
    });
  }
  rmSync(paths.logDir, { recursive: true, force: true });
  rmSync(paths.pm2Home, { recursive: true, force: true });
  mkdirSync(paths.logDir, { recursive: true });
  const keeper = stateKeeper(paths);

  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (!interrupted) {
      interrupted = true;
      process.stderr.write(`\n${signal}: stopping what this run started…\n`);
      void stopLocalStack(paths, keeper.get(), (l) => process.stderr.write(`${l}\n`)).finally(() => process.exit(130));
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    await run({ paths, options, steps, keeper });
    return 0;
  } catch (err) {
    if (interrupted) {
      return 130;
    }
    const failure = err instanceof StepFailedError ? err : new StepFailedError("npm run local", err, []);
    process.stderr.write(`\n✗ ${failure.message}\n`);
    for (const file of failure.logFiles) {
      const tail = tailFile(file, LOG_TAIL_LINES);
      process.stderr.write(`--- last lines of ${relative(process.cwd(), file)} ---\n${tail || "(empty)"}\n`);
    }
    process.stderr.write("\nStopping what this run started…\n");
    await stopLocalStack(paths, keeper.get(), (l) => process.stderr.write(`${l}\n`)).catch((stopErr: unknown) => {
      process.stderr.write(
        `clean-up failed: ${stopErr instanceof Error ? stopErr.message : String(stopErr)}; see ${paths.stateFile}\n`,
      );
    });
    return 1;
  }
}

if (require.main === module) {
  void main().then((code) => process.exit(code));
}

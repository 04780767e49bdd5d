import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect as netConnect, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Wallet, ZeroAddress, MaxUint256, parseEther } from "ethers";
import { Redis } from "ioredis";
import { anvilBinary, natsServerBinary } from "../../scripts/local/binaries";
import { anvilAnswers, natsAnswers, redisAnswers } from "../../scripts/local/probes";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { anvilProvider, anvilWallet, type Anvil } from "../harness/anvil";
import { spawnManaged, waitForReady, type ManagedProcess } from "../harness/child-process";
import { deployNxtpCached } from "../harness/chain-state-cache";
import { fundRouterLiquidity, mintToken, nxtpContractAt, sendTx } from "../harness/deploy";
import { redisServerBinary } from "../harness/redis";
import { allOrFirstFailure, type Stack, type StackChain } from "../harness/stack";
import { AMOUNT, CHAIN1, LIQUIDITY, RECEIVING, SENDING, type E2eStack } from "../e2e/e2e-fixture";
import { DIST, supervise, type Supervised } from "../fault/router-procs";
import { SUBNET, bedPrefix, createBed, destroyBed, type Host } from "./netns";
import { PM2_START_TIMEOUT_MS, pm2Host, type Pm2Host } from "./pm2-host";
import { waitFor } from "../harness/wait";
import { uniquePrefix } from "../harness/prefix";

/**
 * The multi-host bed: six namespaces on one bridge.
 *   a  admin, auction, submitters and pollers (instance 0), messaging-auth; sentinel 1; nats 1
 *   b  auction, standby submitters and pollers (instance 1); sentinel 2; nats 2
 *   c  Redis primary
 *   d  Redis replica; sentinel 3; nats 3
 *   e  anvil chains 1, 1337, 1338
 *   t  the test's door: forward.js, through which the test process (in the machine's own namespace) reaches
 *      the chains, a NATS server and the auth service; it runs nothing of the router's.
 * Submitters and pollers of both hosts compete for the chain's send lease and poller lease: either host may hold
 * them; the other stands by. The router's processes run either directly (`router: "direct"`: one supervised
 * `node dist/services/<role>/main.js` per process) or as an operator deploys them (`router: "pm2"`: each host
 * runs `pm2 start ecosystem.config.js` with its ROUTER_ROLES, test/multihost/pm2-host.ts).
 * Each server runs on its host's address at its standard port; every process of the router reads one config
 * file naming the hosts' addresses, with Redis through the three sentinels.
 */
const HOSTS = [
  { name: "a", octet: 11 },
  { name: "b", octet: 12 },
  { name: "c", octet: 13 },
  { name: "d", octet: 14 },
  { name: "e", octet: 15 },
  { name: "t", octet: 20 },
];
const CHAIN_PORTS: Record<number, number> = { [CHAIN1]: 8545, [SENDING]: 8546, [RECEIVING]: 8547 };
const REDIS_PORT = 6379;
const SENTINEL_PORT = 26379;
const NATS_PORT = 4222;
const AUTH_PORT = 5040;
export const SENTINEL_NAME = "mh-primary";
const FORWARD_JS = resolve(__dirname, "forward.js");

export interface Bed {
  readonly prefix: string;
  readonly hosts: ReadonlyMap<string, Host>;
  host(name: string): Host;
  /** The e2e helpers' view of the bed: chains (through the door), the router, a funded user. */
  readonly s: E2eStack;
  readonly redisPrefix: string;
  readonly configFile: string;
  /** Router processes by name: `<role>-<chain>@<host>` or `<role>@<host>` (direct mode; empty under PM2). */
  readonly procs: ReadonlyMap<string, Supervised>;
  /** The router hosts' PM2 (a, b) under `router: "pm2"`; empty in direct mode. */
  readonly pm2: ReadonlyMap<string, Pm2Host>;
  proc(name: string): Supervised;
  /** Infrastructure processes by name (redis-primary, redis-replica, sentinel@a, nats@a, anvil-1337 …). */
  readonly servers: ReadonlyMap<string, ManagedProcess>;
  /** NATS (on host b) and the auth service, reachable from the test process. */
  readonly natsUrl: string;
  /** All three NATS servers (a, b, d) through the door, comma-separated: a client of these survives any one's loss. */
  readonly natsUrls: string;
  readonly authUrl: string;
  /** A local port forwarded to `host:port` of the bed. */
  door(host: Host, port: number): Promise<number>;
  /** The sentinels' current primary (its host address). */
  primaryAddr(): Promise<string>;
  /**
   * Direct mode: stops every submitter and poller, then starts them again with `env` added, as an operator rolls
   * out a setting: a's first, holding the leases, then b's standbys.
   */
  restartLeaseHolders(env: Readonly<Record<string, string>>): Promise<void>;
  /** `SENTINEL SET <name> <option> <value>` on every sentinel, as an operator tunes a running deployment. */
  sentinelSet(option: string, value: string): Promise<void>;
  /**
   * Starts Redis again on `h` (its earlier process gone) as a replica of the sentinels' current primary, as an
   * operator brings a failed node back; resolves once it answers. Registered as `redis-rejoined@<host>`.
   */
  rejoinRedis(h: Host): Promise<ManagedProcess>;
  outputs(chars?: number): string;
  stop(): Promise<void>;
}

/** ROUTER_ROLES of each router host under PM2 (a is the active host, b the standby). */
export const PM2_ROLES = { a: "admin,auction,submitter,poller", b: "auction,submitter,poller" } as const;

export interface BedOptions {
  /** How the router's processes run: directly, supervised by the test, or under PM2 per host. */
  readonly router?: "direct" | "pm2";
  /** `redis.minReplicas` of the router's config (default: unset, 0: nothing waits for the replica). */
  readonly minReplicas?: number;
  /** Extra environment of every router process in direct mode (lease TTLs sized to the bed's latency, say). */
  readonly routerEnv?: Readonly<Record<string, string>>;
}

/** Creates the namespaces and starts everything; on any failure tears down what came up and rethrows. */
export async function startBed(options: BedOptions = {}): Promise<Bed> {
  const prefix = bedPrefix();
  destroyBed(prefix);
  const dir = mkdtempSync(join(tmpdir(), "multihost-"));
  const servers = new Map<string, ManagedProcess>();
  const procs = new Map<string, Supervised>();
  const pm2 = new Map<string, Pm2Host>();
  const doors: Server[] = [];
  const clients: Redis[] = [];
  const providers: Array<{ destroy(): void }> = [];
  const stop = async (): Promise<void> => {
    // PM2's daemons first, so that none respawns an app while the namespaces' processes are killed.
    for (const h of pm2.values()) h.killDaemon();
    await Promise.allSettled([...procs.values()].map((p) => p.stop()));
    await Promise.allSettled([...servers.values()].map((p) => p.stop()));
    for (const c of clients) c.disconnect();
    for (const p of providers) p.destroy();
    for (const d of doors) d.close();
    destroyBed(prefix);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const hosts = createBed(prefix, HOSTS);
    const host = (name: string): Host =>
      hosts.get(name) ??
      (() => {
        throw new Error(`no host ${name}`);
      })();
    const [a, b, c, d, e, t] = ["a", "b", "c", "d", "e", "t"].map(host);
    const inNs = (name: string, h: Host, command: string, args: readonly string[]): ManagedProcess => {
      const proc = spawnManaged({ name, command: "ip", args: ["netns", "exec", h.ns, command, ...args] });
      servers.set(name, proc);
      return proc;
    };

    // 1. The door: forward.js in t, and per target a local TCP port piped to it with a "host:port" header.
    const socket = join(dir, "door.sock");
    const fwd = inNs("door", t, process.execPath, [FORWARD_JS, socket, SUBNET]);
    await waitForReady(fwd, async () => existsSync(socket), 10_000);
    const door = (h: Host, port: number): Promise<number> =>
      new Promise((done, fail) => {
        const server = createServer((local) => {
          const up = netConnect(socket, () => {
            up.write(`${h.addr}:${port}\n`);
            local.pipe(up);
            up.pipe(local);
          });
          up.on("error", () => local.destroy());
          local.on("error", () => up.destroy());
          up.on("close", () => local.destroy());
        });
        server.unref();
        doors.push(server);
        server.once("error", fail);
        server.listen({ host: "127.0.0.1", port: 0 }, () => {
          const addr = server.address();
          done(typeof addr === "object" && addr ? addr.port : 0);
        });
      });

    // 2-4 start side by side (the chains, Redis with its sentinels, NATS, the auth service): none needs another.
    // 2. Chains on e, reached through the door; the real NXTP contracts deployed on each.
    const routerWallet = Wallet.createRandom();
    const mnemonic = routerWallet.mnemonic?.phrase;
    if (!mnemonic) throw new Error("random wallet without mnemonic");
    const router = routerWallet.address;
    const chains = new Map<number, StackChain>();
    const chain = (id: number): StackChain =>
      chains.get(id) ??
      (() => {
        throw new Error(`no chain ${id}`);
      })();
    const chainsStarted = (async () => {
      await Promise.all(
        Object.entries(CHAIN_PORTS).map(async ([id, port]) => {
          const chainId = Number(id);
          const proc = inNs(`anvil-${chainId}`, e, anvilBinary(), [
            "--host",
            e.addr,
            "--port",
            String(port),
            "--chain-id",
            String(chainId),
            "--silent",
          ]);
          const local = await door(e, port);
          await waitForReady(proc, (ms) => anvilAnswers(local, chainId, ms), 20_000);
          const url = `http://127.0.0.1:${local}`;
          const provider = anvilProvider(url, chainId);
          providers.push(provider);
          const anvil = localAnvil(url, local, chainId, proc);
          const deployer = anvilWallet(0, provider);
          // The harness's cached deploy, as every stack's: anvil_loadState of the contracts as a deploy leaves them.
          const deployment = await deployNxtpCached({ anvil, deployer, routerSigner: router });
          chains.set(chainId, { chainId, anvil, provider, deployer, deployment });
        }),
      );
      const [chain1, sending, receiving] = [chain(CHAIN1), chain(SENDING), chain(RECEIVING)];
      for (const ch of [sending, receiving]) {
        await ch.anvil.setBalance(router, parseEther("100"));
        const funder = anvilWallet(3, ch.provider);
        await mintToken(ch.deployment, funder.address, LIQUIDITY);
        await fundRouterLiquidity({
          deployment: ch.deployment,
          funder,
          router,
          assetId: ch.deployment.token,
          amount: LIQUIDITY,
        });
        // Native and TEST at the same price: the auction's gas fee in TEST is the gas cost in wei.
        await sendTx(ch.deployment.contracts.priceOracle, "setDirectPrice", [ZeroAddress, parseEther("1")]);
        await sendTx(ch.deployment.contracts.priceOracle, "setDirectPrice", [ch.deployment.token, parseEther("1")]);
      }
      const user = anvilWallet(5, sending.provider);
      await sendTx(nxtpContractAt("TestERC20", sending.deployment.token, sending.deployer), "mint", [
        user.address,
        AMOUNT * 1000n,
      ]);
      await sendTx(nxtpContractAt("ERC20", sending.deployment.token, user), "approve", [
        sending.deployment.transactionManager,
        MaxUint256,
      ]);
      return { chain1, sending, receiving, user };
    })();

    // 3. Redis: primary on c, replica on d, sentinels on a, b, d (quorum 2).
    const redisArgs = (h: Host): string[] => [
      "--port",
      String(REDIS_PORT),
      "--bind",
      h.addr,
      "--protected-mode",
      "no",
      "--save",
      "",
      "--appendonly",
      "no",
      "--maxmemory-policy",
      "noeviction",
      "--dir",
      dir,
      "--dbfilename",
      `${h.name}.rdb`,
      "--loglevel",
      "warning",
    ];
    const sentinelHosts = [a, b, d];
    const sentinels: Redis[] = [];
    const redisStarted = (async () => {
      // The first primary syncs its replica at once, not after Redis's default 5 s repl-diskless-sync-delay: that
      // first sync is bed set-up (with redis.minReplicas the router's first write waits for it). d, the primary
      // after a failover, keeps the default: the replicas case's rejoin syncs as Redis ships.
      const primary = inNs("redis-primary", c, redisServerBinary(), [
        ...redisArgs(c),
        "--repl-diskless-sync-delay",
        "0",
      ]);
      const replica = inNs("redis-replica", d, redisServerBinary(), [
        ...redisArgs(d),
        "--replicaof",
        c.addr,
        String(REDIS_PORT),
      ]);
      const [cPort, dPort] = [await door(c, REDIS_PORT), await door(d, REDIS_PORT)];
      await waitForReady(primary, (ms) => redisAnswers(cPort, ms));
      await waitForReady(replica, (ms) => redisAnswers(dPort, ms));
      // The sentinels start once the primary lists the replica: a sentinel reads the replicas from the primary's
      // INFO as it connects, then every 10 s, so one started before the replica's connect knew it 10 s later.
      const onC = new Redis({ host: "127.0.0.1", port: cPort, maxRetriesPerRequest: 1, lazyConnect: true });
      clients.push(onC);
      await waitFor(
        "the replica connected to the primary",
        async () => (/^connected_slaves:[1-9]/m.test(await onC.info("replication")) ? true : undefined),
        10_000,
      );
      const sentinelDoors: number[] = [];
      for (const h of sentinelHosts) {
        const file = join(dir, `sentinel-${h.name}.conf`);
        writeFileSync(
          file,
          [
            `port ${SENTINEL_PORT}`,
            `bind ${h.addr}`,
            "protected-mode no",
            `dir ${dir}`,
            `sentinel monitor ${SENTINEL_NAME} ${c.addr} ${REDIS_PORT} 2`,
            // 1 s instead of Sentinel's default 30 s so a failover fits the suite's time bound.
            `sentinel down-after-milliseconds ${SENTINEL_NAME} 1000`,
            `sentinel failover-timeout ${SENTINEL_NAME} 10000`,
            "",
          ].join("\n"),
        );
        const proc = inNs(`sentinel@${h.name}`, h, redisServerBinary(), [file, "--sentinel", "--loglevel", "warning"]);
        const port = await door(h, SENTINEL_PORT);
        sentinelDoors.push(port);
        await waitForReady(proc, (ms) => redisAnswers(port, ms));
      }
      const sentinelClient = (port: number): Redis => {
        const r = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1, lazyConnect: true });
        clients.push(r);
        return r;
      };
      sentinels.push(...sentinelDoors.map(sentinelClient));
      await waitFor(
        "the sentinels to know each other and the replica",
        async () => {
          for (const r of sentinels) {
            const m = (await r.call("SENTINEL", "master", SENTINEL_NAME)) as string[];
            const field = (k: string): number => Number(m[m.indexOf(k) + 1]);
            if (field("num-other-sentinels") < 2 || field("num-slaves") < 1) return undefined;
          }
          return true;
        },
        30_000,
      );
      return { cPort };
    })();
    const primaryAddr = async (): Promise<string> => {
      for (const r of sentinels) {
        const addr = (await r.call("SENTINEL", "get-master-addr-by-name", SENTINEL_NAME).catch(() => null)) as
          string[] | null;
        if (addr) return addr[0];
      }
      throw new Error("no sentinel answered");
    };
    const sentinelSet = async (option: string, value: string): Promise<void> => {
      for (const r of sentinels) await r.call("SENTINEL", "SET", SENTINEL_NAME, option, value);
    };
    const rejoinRedis = async (h: Host): Promise<ManagedProcess> => {
      const proc = inNs(`redis-rejoined@${h.name}`, h, redisServerBinary(), [
        ...redisArgs(h),
        "--replicaof",
        await primaryAddr(),
        String(REDIS_PORT),
      ]);
      const port = await door(h, REDIS_PORT);
      await waitForReady(proc, (ms) => redisAnswers(port, ms));
      return proc;
    };

    // 4. NATS: a cluster of three (a, b, d), every server routed to every other.
    const natsHosts = [a, b, d];
    const natsDoors: number[] = [];
    const routes = natsHosts.map((h) => `nats://${h.addr}:6222`).join(",");
    const natsStarted = (async () => {
      for (const h of natsHosts) {
        const proc = inNs(`nats@${h.name}`, h, natsServerBinary(), [
          "-a",
          h.addr,
          "-p",
          String(NATS_PORT),
          "--cluster_name",
          "multihost",
          "--cluster",
          `nats://${h.addr}:6222`,
          "--routes",
          routes,
          "-m",
          "8222",
        ]);
        const port = await door(h, NATS_PORT);
        natsDoors.push(port);
        await waitForReady(proc, (ms) => natsAnswers(port, ms));
      }
      const monitors = await Promise.all(natsHosts.map((h) => door(h, 8222)));
      await waitFor(
        "nats routes between all three servers",
        async () => {
          for (const port of monitors) {
            const res = await fetch(`http://127.0.0.1:${port}/routez`).catch(() => undefined);
            const n = res ? (((await res.json()) as { num_routes?: number }).num_routes ?? 0) : 0;
            if (n < 2) return undefined;
          }
          return true;
        },
        20_000,
      );
    })();

    // The messaging's auth service on a.
    const authStarted = (async () => {
      // messaging-auth takes its address from the environment only (`env` execs node: the pid stays node's).
      const auth = inNs("messaging-auth@a", a, "/usr/bin/env", [
        `MESSAGING_AUTH_HOST=${a.addr}`,
        `MESSAGING_AUTH_PORT=${AUTH_PORT}`,
        "MESSAGING_AUTH_LOG_LEVEL=warn",
        process.execPath,
        join(DIST, "messaging-auth/main.js"),
      ]);
      const port = await door(a, AUTH_PORT);
      await waitForReady(auth, async () => (await fetch(`http://127.0.0.1:${port}/auth/${router}`)).ok, 15_000);
      return port;
    })();
    // Every start settled before a failure is thrown: the teardown then stops all that came up.
    await allOrFirstFailure<unknown>([chainsStarted, redisStarted, natsStarted, authStarted]);
    const { chain1, sending, receiving, user } = await chainsStarted;
    const { cPort } = await redisStarted;
    const authPort = await authStarted;

    // 5. The router: one config file, every address a bed host's.
    const redisPrefix = uniquePrefix();
    const entry = (ch: StackChain, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      providers: [`http://${e.addr}:${CHAIN_PORTS[ch.chainId]}`],
      transactionManagerAddress: ch.deployment.transactionManager,
      priceOracleAddress: ch.deployment.priceOracle,
      confirmations: 1,
      ...extra,
    });
    const config = {
      adminToken: "multihost-admin-token-0123456789abcdef",
      mnemonic,
      logLevel: process.env.MULTIHOST_LOG_LEVEL ?? "info",
      network: "local",
      messagingUrl: natsHosts.map((h) => `nats://${h.addr}:${NATS_PORT}`).join(","),
      authUrl: `http://${a.addr}:${AUTH_PORT}`,
      redis: {
        sentinels: sentinelHosts.map((h) => ({ host: h.addr, port: SENTINEL_PORT })),
        name: SENTINEL_NAME,
        ...(options.minReplicas === undefined ? {} : { minReplicas: options.minReplicas }),
      },
      redisPrefix,
      host: a.addr,
      port: 8080,
      swapPools: [
        {
          name: "TEST",
          assets: [
            { chainId: SENDING, assetId: sending.deployment.token },
            { chainId: RECEIVING, assetId: receiving.deployment.token },
          ],
        },
      ],
      chainConfig: {
        [String(CHAIN1)]: entry(chain1),
        [String(SENDING)]: entry(sending),
        // The router relays the user's fulfill on 1338 (the real SDK's relayed mode).
        [String(RECEIVING)]: entry(receiving, { allowRelay: true }),
      },
    };
    const configFile = join(dir, "config.json");
    writeFileSync(configFile, JSON.stringify(config));
    const base = { ROUTER_CONFIG_FILE: configFile, ...options.routerEnv };
    const launched = new Map<string, { name: string; h: Host; role: string; env: Record<string, string> }>();
    const run = (name: string, h: Host, role: string, env: Record<string, string>): Supervised => {
      launched.set(`${name}@${h.name}`, { name, h, role, env });
      const p = supervise({
        name: `${name}@${h.name}`,
        entry: join(DIST, `${role}/main.js`),
        env: { ...base, NODE_APP_INSTANCE: "0", ...env },
        netns: h.ns,
      });
      procs.set(p.name, p);
      return p;
    };
    if (options.router === "pm2") await startPm2Router({ a, b, dir, configFile, pm2 });
    else await startDirectRouter({ a, b, chain, run, procs });

    const restartLeaseHolders = async (env: Readonly<Record<string, string>>): Promise<void> => {
      const holders = [...procs.keys()].filter((n) => /^(submitter|poller)-\d+@/.test(n));
      await Promise.all(holders.map((n) => procs.get(n)?.stop() ?? Promise.resolve()));
      for (const h of [a, b]) {
        for (const spec of holders.filter((n) => n.endsWith(`@${h.name}`)).map((n) => launched.get(n))) {
          if (spec) run(spec.name, spec.h, spec.role, { ...spec.env, ...env });
        }
        if (h === a) await waitForLeasesOnA(procs);
      }
    };
    const s: E2eStack = {
      stack: stackOf(chains),
      chain1,
      sending,
      receiving,
      // The first primary through the door (the E2eStack shape wants a URL); the router itself uses the sentinels.
      redisUrl: `redis://127.0.0.1:${cPort}`,
      mnemonic,
      routerSigner: createMnemonicSigner(mnemonic),
      router,
      user,
      otherToken: ZeroAddress,
      dir,
    };
    const outputs = (chars = 3_000): string => {
      const logDir = join(tmpdir(), `multihost-logs-${redisPrefix}`);
      mkdirSync(logDir, { recursive: true });
      for (const p of procs.values()) writeFileSync(join(logDir, `${p.name}.log`), p.output());
      for (const ph of pm2.values()) {
        for (const app of pm2AppsOf(ph.roles)) writeFileSync(join(logDir, `${app}@${ph.host.name}.log`), ph.logs(app));
      }
      return [
        ...[...procs.values()].map((p) => `--- ${p.name} (restarts ${p.restarts()}) ---\n${p.output().slice(-chars)}`),
        ...[...pm2.values()].flatMap((ph) =>
          pm2AppsOf(ph.roles).map((app) => `--- ${app}@${ph.host.name} (PM2) ---\n${ph.logs(app).slice(-chars)}`),
        ),
        ...[...servers.values()].map((p) => `--- ${p.name} ---\n${p.outputTail().slice(-chars)}`),
        `(whole router outputs in ${logDir})`,
      ].join("\n");
    };
    const bed: Bed = {
      prefix,
      hosts,
      host,
      s,
      redisPrefix,
      configFile,
      procs,
      pm2,
      proc: (name) =>
        procs.get(name) ??
        (() => {
          throw new Error(`no process ${name}`);
        })(),
      servers,
      natsUrl: `nats://127.0.0.1:${await door(b, NATS_PORT)}`,
      natsUrls: natsDoors.map((port) => `nats://127.0.0.1:${port}`).join(","),
      authUrl: `http://127.0.0.1:${authPort}`,
      door,
      primaryAddr,
      restartLeaseHolders,
      sentinelSet,
      rejoinRedis,
      outputs,
      stop,
    };
    return bed;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const tails = [...procs.values()]
      .map((p) => `--- ${p.name} ---\n${p.output().slice(-2000)}`)
      .concat(
        [...pm2.values()].flatMap((ph) =>
          pm2AppsOf(ph.roles).map((app) => `--- ${app}@${ph.host.name} (PM2) ---\n${ph.logs(app).slice(-2000)}`),
        ),
      )
      .concat([...servers.values()].map((p) => `--- ${p.name} ---\n${p.outputTail().slice(-2000)}`))
      .join("\n");
    await stop();
    throw new Error(`${message}\n${tails}`, { cause: err });
  }
}

type RunDirect = (name: string, h: Host, role: string, env: Record<string, string>) => Supervised;

/** a's pollers and submitters hold every pool chain's leases: a is the active host, b joins as the standby. */
const holdsLeases = (output: (role: string, chainId: number) => string): boolean =>
  [SENDING, RECEIVING].every(
    (id) =>
      output("poller", id).includes("poller lease acquired") &&
      output("submitter", id).includes("sender lease acquired"),
  );

function waitForLeasesOnA(procs: ReadonlyMap<string, Supervised>): Promise<true> {
  return waitFor(
    "a's pollers and submitters to hold their leases",
    async () => (holdsLeases((role, id) => procs.get(`${role}-${id}@a`)?.output() ?? "") ? true : undefined),
    30_000,
  );
}

/**
 * Direct mode: one supervised process per role and chain on a (and b's auction), then b's pollers and submitters
 * (instance 1) once a holds every lease. The pollers run
 * one process per chain here (POLLER_PROCESS_PER_CHAIN=1's layout, still supported), so the direct bed keeps that
 * layout covered across hosts; the PM2 bed runs the shipped default, one poller process for both chains.
 */
async function startDirectRouter(p: {
  a: Host;
  b: Host;
  chain: (id: number) => StackChain;
  run: RunDirect;
  procs: ReadonlyMap<string, Supervised>;
}): Promise<void> {
  const { a, b, run, procs } = p;
  const heads = await Promise.all(
    [SENDING, RECEIVING].map(async (id) => (await p.chain(id).provider.getBlockNumber()) + 1),
  );
  // a's pollers and submitters first, holding their chains' leases before b's start, as in production where the
  // standbys join a running router. The auctions hold no lease: b's warms up beside a's.
  for (const [i, id] of [SENDING, RECEIVING].entries()) {
    run(`poller-${id}`, a, "poller", { CHAIN_ID: String(id), POLLER_START_BLOCK: String(heads[i]) });
    run(`submitter-${id}`, a, "submitter", { CHAIN_ID: String(id) });
  }
  run("auction", a, "auction", {});
  run("auction", b, "auction", { NODE_APP_INSTANCE: "1" });
  run("admin", a, "admin", {});
  await waitForLeasesOnA(procs);
  for (const [i, id] of [SENDING, RECEIVING].entries()) {
    run(`poller-${id}`, b, "poller", {
      CHAIN_ID: String(id),
      POLLER_START_BLOCK: String(heads[i]),
      NODE_APP_INSTANCE: "1",
    });
    run(`submitter-${id}`, b, "submitter", { CHAIN_ID: String(id), NODE_APP_INSTANCE: "1" });
  }
}

/**
 * The apps `pm2 start ecosystem.config.js` runs for `roles` on the bed's config (chain 1 is in no pool): a
 * submitter per chain, one poller process for both (the shipped default).
 */
export function pm2AppsOf(roles: string): string[] {
  const items = roles.split(",");
  return [
    ...(items.includes("admin") ? ["admin"] : []),
    ...(items.includes("auction") ? ["auction"] : []),
    ...(items.includes("submitter") ? [SENDING, RECEIVING].map((id) => `submitter-${id}`) : []),
    ...(items.includes("poller") ? ["poller"] : []),
  ].sort();
}

/** The PM2 app of `role` for `chainId`: `submitter-<id>`, or the one `poller` of both chains. */
export function pm2AppOf(role: "submitter" | "poller", chainId: number): string {
  return role === "poller" ? "poller" : `submitter-${chainId}`;
}

/** The log lines of one chain (its `chainId` field): a poller process's lines are every chain's. */
export function chainLines(output: string, chainId: number): string {
  const ofChain = new RegExp(`"chainId":${chainId}[,}]`);
  return output
    .split("\n")
    .filter((line) => ofChain.test(line))
    .join("\n");
}

function pm2ChainOutput(ph: Pm2Host, role: string, chainId: number): string {
  return chainLines(ph.output(pm2AppOf(role === "poller" ? "poller" : "submitter", chainId)), chainId);
}

/**
 * PM2 mode: `pm2 start ecosystem.config.js` on a with PM2_ROLES.a, once a holds the leases the same on b with
 * PM2_ROLES.b; resolves when every app of both hosts is online (wait_ready: it sent "ready").
 * One auction instance per host: the two hosts are the auction's two instances.
 */
async function startPm2Router(p: {
  a: Host;
  b: Host;
  dir: string;
  configFile: string;
  pm2: Map<string, Pm2Host>;
}): Promise<void> {
  const env = { AUCTION_INSTANCES: "1", SUBMITTER_STANDBYS: "0", POLLER_STANDBYS: "0" };
  const start = async (h: Host, roles: string): Promise<Pm2Host> => {
    const ph = pm2Host({ host: h, roles, dir: p.dir, configFile: p.configFile, env });
    p.pm2.set(h.name, ph);
    const started = await ph.pm2(["start", "ecosystem.config.js"], PM2_START_TIMEOUT_MS);
    if (started.status !== 0) throw new Error(`pm2 start on ${h.name} failed:\n${started.output.slice(-3_000)}`);
    return ph;
  };
  const pa = await start(p.a, PM2_ROLES.a);
  await waitFor(
    "a's pollers and submitters (PM2) to hold their leases",
    async () => (holdsLeases((role, id) => pm2ChainOutput(pa, role, id)) ? true : undefined),
    30_000,
  );
  const pb = await start(p.b, PM2_ROLES.b);
  for (const [ph, roles] of [
    [pa, PM2_ROLES.a],
    [pb, PM2_ROLES.b],
  ] as const) {
    const apps = pm2AppsOf(roles);
    await waitFor(
      `every PM2 app of ${ph.host.name} online (${apps.join(", ")})`,
      async () => {
        const online = (await ph.jlist()).filter((x) => x.pm2_env.status === "online").map((x) => x.name);
        return apps.every((name) => online.includes(name)) ? true : undefined;
      },
      45_000,
    );
  }
}

/** An Anvil handle on a chain reached through the door (the harness's own speaks to 127.0.0.1 directly). */
function localAnvil(url: string, port: number, chainId: number, proc: ManagedProcess): Anvil {
  const rpc = async <T>(method: string, params: readonly unknown[] = []): Promise<T> => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const reply = (await res.json()) as { result?: T; error?: { message?: string } };
    if (reply.error) throw new Error(`${method}: ${reply.error.message ?? "error"}`);
    return reply.result as T;
  };
  const hex = (n: bigint | number): string => `0x${n.toString(16)}`;
  return {
    url,
    port,
    chainId,
    pid: proc.pid,
    stop: proc.stop,
    rpc,
    mine: async (blocks = 1) => void (await rpc("anvil_mine", [hex(blocks)])),
    increaseTime: async (seconds) => void (await rpc("evm_increaseTime", [seconds])),
    setAutomine: async (on) => void (await rpc("evm_setAutomine", [on])),
    setBalance: async (address, wei) => void (await rpc("anvil_setBalance", [address, hex(wei)])),
  };
}

function stackOf(chains: ReadonlyMap<number, StackChain>): Stack {
  return {
    chains,
    routerSigner: "",
    chain: (id) =>
      chains.get(id) ??
      (() => {
        throw new Error(`no chain ${id}`);
      })(),
    stop: async () => undefined,
  };
}

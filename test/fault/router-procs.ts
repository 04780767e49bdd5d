import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { isExecutable } from "../../scripts/local/binaries";
import { withTimeout } from "../../shared/timing";
import { createTransferStore, type TransferStore } from "../../shared/transfers/transfer-store";
import { routerConfigJson, RECEIVING, SENDING, type E2eStack } from "../e2e/e2e-fixture";
import { waitFor } from "../harness/wait";
import { uniquePrefix } from "../harness/prefix";

/**
 * The router's processes as real child processes (dist/services/<role>/main.js), each restarted like PM2 with
 * ecosystem.config.js would: a fixed 250 ms after it died. The fault tests SIGKILL, SIGSTOP or starve them and
 * judge only what reaches the chains and Redis.
 */
export const DIST = resolve(__dirname, "../../dist/services");
export const PM2_RESTART_DELAY_MS = 250;
const OUTPUT_KEEP_CHARS = 256 * 1024;

export function assertDistBuilt(): void {
  for (const role of ["submitter", "poller", "auction", "admin"]) {
    const main = join(DIST, role, "main.js");
    if (!existsSync(main))
      throw new Error(`${main} is missing: run npx tsc -p tsconfig.build.json (or npm run build) first`);
  }
}

export interface Supervised {
  readonly name: string;
  /** pid of the current incarnation, undefined while it is down. */
  pid(): number | undefined;
  /** How many times it was respawned. */
  restarts(): number;
  /** Every incarnation's output, newest last (capped). */
  output(): string;
  /** Sends `signal` to the current incarnation; false when none runs. */
  signal(signal: NodeJS.Signals): boolean;
  /** Resolves once an incarnation newer than `afterRestarts` runs. */
  respawned(afterRestarts: number, timeoutMs?: number): Promise<void>;
  /** Stops for good (SIGTERM, SIGKILL after 5 s); no respawn. */
  stop(): Promise<void>;
}

/** The kernel SIGKILLs the child when this process dies (util-linux setpriv), so a killed jest leaks nothing. */
function launch(entry: string, netns?: string): { command: string; args: string[] } {
  const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find(isExecutable);
  // `ip netns exec` execs node in the host's namespace: the pid (and the parent-death signal) stay node's.
  const node = netns ? ["ip", "netns", "exec", netns, process.execPath, entry] : [process.execPath, entry];
  return setpriv
    ? { command: setpriv, args: ["--pdeathsig", "SIGKILL", "--", ...node] }
    : { command: node[0], args: node.slice(1) };
}

/** `node entry` with `env`, respawned `restartDelayMs` after every exit until stop(). */
export function supervise(p: {
  name: string;
  entry: string;
  env: Record<string, string>;
  restartDelayMs?: number;
  /** Network namespace to run in (the multi-host test bed's hosts). */
  netns?: string;
}): Supervised {
  const env: NodeJS.ProcessEnv = { ...process.env, ...p.env };
  for (const secret of ["ROUTER_ADMIN_TOKEN", "ROUTER_MNEMONIC", "REDIS_URL"]) delete env[secret];
  let out = "";
  let child: ChildProcess | undefined;
  let restarts = 0;
  let stopping = false;
  let exited: Promise<void> = Promise.resolve();
  const start = (): void => {
    const { command, args } = launch(p.entry, p.netns);
    const c = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env });
    child = c;
    const append = (chunk: Buffer): void => {
      out = (out + chunk.toString()).slice(-OUTPUT_KEEP_CHARS);
    };
    c.stdout?.on("data", append);
    c.stderr?.on("data", append);
    exited = new Promise((done) =>
      c.once("exit", (code, sig) => {
        out += `\n[${p.name} pid ${c.pid} exited: ${sig ?? `code ${code}`}]\n`;
        if (child === c) child = undefined;
        done();
        if (!stopping) {
          setTimeout(() => {
            if (!stopping) {
              restarts += 1;
              start();
            }
          }, p.restartDelayMs ?? PM2_RESTART_DELAY_MS);
        }
      }),
    );
  };
  start();
  return {
    name: p.name,
    pid: () => child?.pid,
    restarts: () => restarts,
    output: () => out,
    signal: (sig) => (child ? child.kill(sig) : false),
    respawned: (after, timeoutMs = 5_000) =>
      waitFor(`${p.name} respawned`, async () => (restarts > after && child ? true : undefined), timeoutMs).then(
        () => undefined,
      ),
    stop: async () => {
      stopping = true;
      const c = child;
      if (!c) return;
      c.kill("SIGCONT");
      c.kill("SIGTERM");
      await withTimeout(exited, 5_000).catch(async () => {
        c.kill("SIGKILL");
        await withTimeout(exited, 3_000).catch(() => undefined);
      });
    },
  };
}

export interface RouterProcsParams {
  /** Replaces the chain's config entry fields (providers, confirmations …). */
  readonly chainOverrides?: Readonly<Record<number, Record<string, unknown>>>;
  /** The Redis the processes use instead of the stack's. */
  readonly redisUrl?: string;
  /** Extra environment for every process (e.g. SUBMITTER_LEASE_TTL_MS). */
  readonly env?: Record<string, string>;
  /** Standby submitters per chain (instances 1..n, named submitter-<chain>#<i>), as SUBMITTER_STANDBYS does under PM2. */
  readonly standbys?: number;
}

export interface RouterProcs {
  readonly prefix: string;
  readonly configFile: string;
  readonly store: TransferStore;
  readonly redis: Redis;
  /** submitter-1337, submitter-1338, poller (of both chains) (and standbys submitter-<chain>#<i>). */
  readonly procs: ReadonlyMap<string, Supervised>;
  proc(name: string): Supervised;
  /** Last output of every process, for a failure message; the whole of each is kept in a file it names. */
  outputs(chars?: number): string;
  stop(): Promise<void>;
}

/**
 * One submitter per swap chain and one poller process for both (CHAIN_ID=1337,1338, as ecosystem.config.js runs
 * them) as supervised children, over the config the e2e tests use (with `chainOverrides`). Resolves once both
 * chains' pollers stored a cursor (they read and write Redis and a chain).
 */
export async function startRouterProcs(s: E2eStack, dir: string, p: RouterProcsParams = {}): Promise<RouterProcs> {
  const prefix = uniquePrefix();
  const raw = routerConfigJson({ ...s, redisUrl: p.redisUrl ?? s.redisUrl }, prefix, {});
  const chains = raw.chainConfig as Record<string, Record<string, unknown>>;
  for (const [id, extra] of Object.entries(p.chainOverrides ?? {})) chains[id] = { ...chains[id], ...extra };
  // A port range of this run's own: two test files must not fight over /metrics ports (they would run without).
  raw.metricsPort = 20_000 + Math.floor(Math.random() * 30_000);
  const configFile = join(dir, `${prefix}.json`);
  writeFileSync(configFile, JSON.stringify(raw));
  const redis = new Redis(p.redisUrl ?? s.redisUrl, { maxRetriesPerRequest: null });
  const store = createTransferStore(redis, prefix);
  const procs = new Map<string, Supervised>();
  const base = { ROUTER_CONFIG_FILE: configFile, NODE_APP_INSTANCE: "0", ...p.env };
  const spawnedAtMs = Date.now();
  procs.set(
    "poller",
    supervise({
      name: "poller",
      entry: join(DIST, "poller/main.js"),
      // Shortened polls (default 1 s) so the fault cases' many swaps fit the suite's time; recovery itself is
      // governed by the leases and PM2's restart delay, which stay at their shipped values unless a case says otherwise.
      env: {
        ...base,
        CHAIN_ID: `${SENDING},${RECEIVING}`,
        POLLER_INTERVAL_MS: "50",
        POLLER_START_BLOCK: String(await levelStartBlock(s)),
      },
    }),
  );
  for (const chainId of [SENDING, RECEIVING]) {
    procs.set(
      `submitter-${chainId}`,
      supervise({
        name: `submitter-${chainId}`,
        entry: join(DIST, "submitter/main.js"),
        env: { ...base, CHAIN_ID: String(chainId), SUBMITTER_POLL_INTERVAL_MS: "50" },
      }),
    );
    for (let i = 1; i <= (p.standbys ?? 0); i += 1) {
      procs.set(
        `submitter-${chainId}#${i}`,
        supervise({
          name: `submitter-${chainId}#${i}`,
          entry: join(DIST, "submitter/main.js"),
          env: { ...base, CHAIN_ID: String(chainId), SUBMITTER_POLL_INTERVAL_MS: "50", NODE_APP_INSTANCE: String(i) },
        }),
      );
    }
  }
  const outputs = (chars = 3_000): string => {
    const logDir = join(tmpdir(), `fault-logs-${prefix}`);
    mkdirSync(logDir, { recursive: true });
    for (const x of procs.values()) writeFileSync(join(logDir, `${x.name}.log`), x.output());
    const tails = [...procs.values()].map(
      (x) => `--- ${x.name} (restarts ${x.restarts()}) ---\n${x.output().slice(-chars)}`,
    );
    return `${tails.join("\n")}\n(whole outputs in ${logDir})`;
  };
  const stop = async (): Promise<void> => {
    await Promise.all([...procs.values()].map((x) => x.stop()));
    redis.disconnect();
  };
  try {
    for (const chainId of [SENDING, RECEIVING]) {
      await waitFor(
        `the poller of ${chainId} stored a cursor`,
        async () => (((await store.getHead(chainId))?.updatedAtMs ?? 0) > spawnedAtMs ? true : undefined),
        20_000,
      );
    }
  } catch (err) {
    const message = `${err instanceof Error ? err.message : String(err)}\n${outputs()}`;
    await stop();
    throw new Error(message, { cause: err });
  }
  return {
    prefix,
    configFile,
    store,
    redis,
    procs,
    outputs,
    stop,
    proc: (name) =>
      procs.get(name) ??
      (() => {
        throw new Error(`no process ${name}`);
      })(),
  };
}

/**
 * POLLER_START_BLOCK serves every chain of the poller process: the lower chain is brought level with empty blocks,
 * and the next block is the start, so neither chain reads an earlier case's transfers.
 */
async function levelStartBlock(s: E2eStack): Promise<number> {
  const chains = [SENDING, RECEIVING].map((id) => s.stack.chain(id));
  const heads = await Promise.all(chains.map((c) => c.provider.getBlockNumber()));
  const top = Math.max(...heads);
  for (const [i, c] of chains.entries()) {
    if (top > heads[i]) await c.anvil.mine(top - heads[i]);
  }
  return top + 1;
}

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import type { RedisSentinelConfig } from "../../shared/config/types";
import { redisAnswers, redisArgs } from "../../scripts/local/probes";
import { sleep } from "../../shared/timing";
import { startOnFreePort, type ManagedProcess } from "./child-process";
import { waitFor } from "./wait";
import { redisServerBinary } from "./redis";

/**
 * A Redis primary, its replicas and a quorum of sentinels (Debian's redis-server in `--sentinel` mode: the
 * `redis-sentinel` package is only a symlink to it), all on free loopback ports. `config` is what a router's
 * `redis` key would hold; `killPrimary()` SIGKILLs the current primary and `waitForPromotion()` waits until the
 * sentinels name another one. A multi-host test bed can start one group and point every host's config at it.
 */
export interface SentinelGroup {
  /** The `redis` config entry of a router using this group. */
  readonly config: RedisSentinelConfig;
  readonly name: string;
  /** Every data node (primary and replicas) by port; a killed one stays listed with its exit status set. */
  readonly nodes: ReadonlyMap<number, ManagedProcess>;
  readonly sentinelPorts: readonly number[];
  /** The port the sentinels currently name as primary. */
  primaryPort(): Promise<number>;
  /** SIGKILLs the current primary (no shutdown, no final sync); returns its port. */
  killPrimary(): Promise<number>;
  /** Resolves with the new primary's port once the sentinels have promoted a node other than `oldPort`. */
  waitForPromotion(oldPort: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

export interface StartSentinelGroupOptions {
  readonly name?: string;
  readonly replicas?: number;
  readonly sentinels?: number;
  /**
   * How long a silent primary counts as up (`down-after-milliseconds`). Sentinel's default is 30 s; tests use
   * 1 s so a failover takes a few seconds instead of half a minute.
   */
  readonly downAfterMs?: number;
}

export async function startSentinelGroup(opts: StartSentinelGroupOptions = {}): Promise<SentinelGroup> {
  const name = opts.name ?? "router-primary";
  const downAfterMs = opts.downAfterMs ?? 1_000;
  const dir = mkdtempSync(join(tmpdir(), "router-sentinel-"));
  const nodes = new Map<number, ManagedProcess>();
  const sentinels: ManagedProcess[] = [];
  const sentinelPorts: number[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all([...sentinels, ...nodes.values()].map((p) => p.stop().catch(() => undefined)));
    rmSync(dir, { recursive: true, force: true });
  };

  // A replica writes the RDB of its full sync into its working directory: keep it in ours, not the cwd.
  const nodeArgs = (port: number): string[] => [...redisArgs(port), "--dir", dir];
  try {
    const primary = await startOnFreePort({
      name: "redis-primary",
      command: redisServerBinary(),
      args: nodeArgs,
      probe: redisAnswers,
    });
    nodes.set(primary.port, primary.proc);
    // Redis holds each full sync back repl-diskless-sync-delay (5 s) for more replicas to join it: off for the
    // replicas' first syncs (of an empty data set), then back to Redis's own value for the resyncs a test causes.
    const [, syncDelay] = (await withClient(primary.port, (r) =>
      r.config("GET", "repl-diskless-sync-delay"),
    )) as string[];
    await withClient(primary.port, (r) => r.config("SET", "repl-diskless-sync-delay", "0"));
    for (let i = 0; i < (opts.replicas ?? 1); i += 1) {
      const replica = await startOnFreePort({
        name: "redis-replica",
        command: redisServerBinary(),
        args: (port) => [...nodeArgs(port), "--replicaof", "127.0.0.1", String(primary.port)],
        probe: redisAnswers,
      });
      nodes.set(replica.port, replica.proc);
    }
    await waitForReplicas(primary.port, opts.replicas ?? 1);
    await withClient(primary.port, (r) => r.config("SET", "repl-diskless-sync-delay", syncDelay));
    for (let i = 0; i < (opts.sentinels ?? 3); i += 1) {
      const started = await startOnFreePort({
        name: "redis-sentinel",
        command: redisServerBinary(),
        args: (port) => {
          // Sentinel rewrites its own file (discovered replicas, epochs): one writable file per sentinel.
          const file = join(dir, `sentinel-${port}.conf`);
          writeFileSync(
            file,
            [
              `port ${port}`,
              "bind 127.0.0.1",
              `dir ${dir}`,
              `sentinel monitor ${name} 127.0.0.1 ${primary.port} ${Math.floor((opts.sentinels ?? 3) / 2) + 1}`,
              `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
              `sentinel failover-timeout ${name} 10000`,
              `sentinel parallel-syncs ${name} 1`,
              "",
            ].join("\n"),
          );
          return [file, "--sentinel", "--loglevel", "warning"];
        },
        probe: redisAnswers,
      });
      sentinels.push(started.proc);
      sentinelPorts.push(started.port);
    }
    await waitForSentinelsToAgree(sentinelPorts, name, opts.sentinels ?? 3);
  } catch (err) {
    await stopAll();
    throw err;
  }

  const primaryPort = (): Promise<number> => askSentinels(sentinelPorts, name);
  return {
    config: { sentinels: sentinelPorts.map((port) => ({ host: "127.0.0.1", port })), name },
    name,
    nodes,
    sentinelPorts,
    primaryPort,
    killPrimary: async () => {
      const port = await primaryPort();
      const proc = nodes.get(port);
      if (!proc) {
        throw new Error(`the sentinels name port ${port}, which is no node of this group`);
      }
      process.kill(proc.pid, "SIGKILL");
      return port;
    },
    waitForPromotion: async (oldPort, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const port = await primaryPort().catch(() => oldPort);
        if (port !== oldPort && (await isPrimary(port))) {
          return port;
        }
        if (Date.now() > deadline) {
          throw new Error(`no replica was promoted within ${timeoutMs} ms (sentinels still name ${port})`);
        }
        await sleep(100);
      }
    },
    stop: stopAll,
  };
}

const PROBE_TIMEOUT_MS = 2_000;

async function withClient<T>(port: number, fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    host: "127.0.0.1",
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    // Each probe bounded, so a node that accepts but never answers cannot hold a wait past its deadline.
    connectTimeout: PROBE_TIMEOUT_MS,
    commandTimeout: PROBE_TIMEOUT_MS,
  });
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

async function askSentinels(ports: readonly number[], name: string): Promise<number> {
  let lastError: unknown;
  for (const port of ports) {
    try {
      const addr = await withClient(port, (r) => r.call("SENTINEL", "get-master-addr-by-name", name));
      if (Array.isArray(addr) && addr.length === 2) {
        return Number(addr[1]);
      }
    } catch (err) {
      lastError = err;
    }
  }
  throw new Error(`no sentinel answered for ${name}: ${String(lastError)}`);
}

async function isPrimary(port: number): Promise<boolean> {
  return withClient(port, async (r) => ((await r.call("ROLE")) as unknown[])[0] === "master");
}

/** Polls a check against servers that may refuse a connection while they start or fail over (that reads "not yet"). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  await waitFor(what, () => check().catch(() => false), 20_000, 100);
}

/** A replica that has not finished its first sync cannot be promoted: wait for every link to be up. */
function waitForReplicas(primaryPort: number, count: number): Promise<void> {
  return until(`${count} replica(s) in sync with the primary`, () =>
    withClient(primaryPort, async (r) => {
      const info = await r.info("replication");
      const online = info.split("\n").filter((l) => /^slave\d+:.*state=online/.test(l)).length;
      return online >= count;
    }),
  );
}

/** Each sentinel must know the replicas and the other sentinels before a failover can reach quorum. */
function waitForSentinelsToAgree(ports: readonly number[], name: string, count: number): Promise<void> {
  return until("the sentinels to discover each other and the replicas", async () => {
    for (const port of ports) {
      const ok = await withClient(port, async (r) => {
        const master = (await r.call("SENTINEL", "master", name)) as string[];
        const field = (key: string): number => Number(master[master.indexOf(key) + 1]);
        return field("num-other-sentinels") >= count - 1 && field("num-slaves") >= 1;
      });
      if (!ok) {
        return false;
      }
    }
    return true;
  });
}

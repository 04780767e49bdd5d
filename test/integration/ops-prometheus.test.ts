import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type { AuthServer } from "../../services/messaging-auth/app";
import { ecosystemApps, prometheusConfigFor } from "../../scripts/ops-prometheus";
import { startAuthServer } from "../harness/auth-server";
import { ROUTER_DIST, spawnRouterProcess, type ManagedProcess } from "../harness/child-process";
import { getFreePort } from "../harness/free-port";
import { startNats, type NatsServer } from "../harness/nats";
import { startRedis, type RedisServer } from "../harness/redis";
import { waitFor } from "../harness/wait";

/**
 * The scrape config generated for a config against the processes of that config, running: each PM2 app of
 * ecosystem.config.js is started as PM2 starts it (its script, its env, NODE_APP_INSTANCE 0..instances-1) as a
 * plain child process (no PM2 daemon: the machine is shared). Real Redis and NATS; the chains' providers answer
 * nothing, which the processes retry while their metrics servers serve (they come up before start(), in
 * shared/process/run-service.ts). The processes are those of a two-host role split, so one set of seven processes
 * checks both the split (per host) and the single host (no ROUTER_ROLES): the split is disjoint and covers all.
 */
const MNEMONIC = "test test test test test test test test test test test junk";
const TM = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const HOST_A = "admin,auction,poller";
const HOST_B = "submitter";

/** A base port with the 32-port slots of admin, auction and three chains free (nothing else binds them meanwhile). */
async function freeBase(): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const ports = Array.from({ length: 8 * 32 }, (_, i) => base + i);
    if ((await Promise.all(ports.map(canListen))).every(Boolean)) {
      return base;
    }
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: "127.0.0.1", port }, () => server.close(() => resolve(true)));
  });
}

/** The TCP ports a process listens on: its socket inodes matched against /proc/net/tcp{,6} LISTEN rows. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]);
    } catch {
      // The fd closed between readdir and readlink.
    }
  }
  const ports: number[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const row of readFileSync(table, "utf8").split("\n").slice(1)) {
      const cols = row.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === "0A" && inodes.has(cols[9])) {
        ports.push(parseInt(cols[1].split(":")[1], 16));
      }
    }
  }
  return ports;
}

function targetPorts(yaml: string): number[] {
  return [...yaml.matchAll(/"[^"\s]+:(\d+)"/g)].map((m) => Number(m[1])).sort((a, b) => a - b);
}

describe("npm run ops:prometheus against the running processes of a config", () => {
  let dir: string;
  let redis: RedisServer;
  let nats: NatsServer;
  let auth: AuthServer;
  let configFile: string;
  let adminPort: number;
  const procs: ManagedProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ops-prometheus-"));
    [redis, nats, auth] = await Promise.all([startRedis(), startNats(), startAuthServer()]);
    adminPort = await getFreePort();
    configFile = join(dir, "config.json");
    const chain = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      providers: ["http://127.0.0.1:9"],
      transactionManagerAddress: TM,
      ...extra,
    });
    writeFileSync(
      configFile,
      JSON.stringify({
        adminToken: "a-long-enough-admin-token",
        mnemonic: MNEMONIC,
        network: "local",
        logLevel: "warn",
        host: "127.0.0.1",
        port: adminPort,
        redisUrl: redis.url,
        messagingUrl: nats.url,
        authUrl: auth.url,
        metricsPort: await freeBase(),
        // Chain 1 only prices gas (no pool: no processes); 1338 is pinned below 1337.
        chainConfig: { "1": chain(), "1337": chain(), "1338": chain({ metricsSlot: 0 }) },
        swapPools: [
          {
            name: "TEST",
            assets: [
              { chainId: 1337, assetId: TOKEN },
              { chainId: 1338, assetId: TOKEN },
            ],
          },
        ],
      }),
    );
    for (const roles of [HOST_A, HOST_B]) {
      for (const app of ecosystemApps(configFile, { ROUTER_ROLES: roles })) {
        for (let i = 0; i < (app.instances ?? 1); i++) {
          procs.push(
            spawnRouterProcess({
              name: `${app.name}#${i}`,
              main: relative(ROUTER_DIST, join(ROUTER_DIST, "..", "..", app.script)),
              configFile,
              env: [
                ...Object.entries(app.env ?? {})
                  .filter(([name]) => name !== "ROUTER_CONFIG_FILE")
                  .map(([name, value]) => `${name}=${String(value)}`),
                `NODE_APP_INSTANCE=${i}`,
              ],
            }),
          );
        }
      }
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await Promise.all([redis?.stop(), nats?.stop(), auth?.close()]);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("every target answers /metrics, and every port the processes listen on (but the admin API) is a target", async () => {
    const split = prometheusConfigFor(
      configFile,
      [
        { address: "127.0.0.1", roles: HOST_A },
        { address: "127.0.0.1", roles: HOST_B },
      ],
      {},
    );
    const single = prometheusConfigFor(configFile, [], {});
    // admin, 2 auction instances, a submitter for each of 1337 and 1338 and one poller for both (on 1337's poller
    // port); nothing for chain 1.
    expect(procs).toHaveLength(6);
    expect(targetPorts(split)).toEqual(targetPorts(single));
    expect(new Set(targetPorts(single)).size).toBe(6);

    const answering = new Set<number>();
    await waitFor(
      "every generated target answering /metrics",
      async () => {
        for (const proc of procs) {
          const exit = proc.exitStatus();
          if (exit) throw new Error(`${proc.name} exited (${JSON.stringify(exit)}):\n${proc.outputTail()}`);
        }
        for (const port of targetPorts(single)) {
          if (answering.has(port)) continue;
          const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(3_000) }).catch(
            () => undefined,
          );
          if (res?.ok && (await res.text()).includes("process_start_time_seconds")) answering.add(port);
        }
        return answering.size === targetPorts(single).length;
      },
      90_000,
      500,
    );

    const listening = procs.flatMap((p) => listeningPorts(p.pid)).filter((port) => port !== adminPort);
    expect(listening.sort((a, b) => a - b)).toEqual(targetPorts(single));
  }, 150_000);
});

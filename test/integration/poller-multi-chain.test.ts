import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { readHeartbeats } from "../../shared/metrics/heartbeat";
import { metricsPortFor } from "../../shared/metrics/metrics-port";
import { TX_JOB } from "../../shared/queues";
import { pollerLeaseKey, transferRecordKey } from "../../shared/coordination/keys";
import { startPollers, type RunningPollers } from "../../services/poller/start-pollers";
import { spawnRouterProcess, waitForReady, type ManagedProcess } from "../harness/child-process";
import { getFreePort } from "../harness/free-port";
import { captureLogs, type LogCapture } from "../harness/logs";
import { fetchOnceListening, waitFor } from "../harness/wait";
import {
  FAST,
  RECEIVING,
  SENDING,
  pollerConfig,
  pollerConfigJson,
  routerPrepareReceiver,
  spawnPollerChild,
  storedCursor,
  usePollerSuite,
  userPrepare,
  type UserPrepared,
} from "./poller-fixture";

/**
 * One poller process for several chains (CHAIN_ID=1337,1338, ecosystem.config.js's default `poller` app): one
 * independent poller per chain, each under its own lease (docs/poller.md, "One active poller per chain"), so a
 * standby process of the same chains takes each lease over when the first process stops or dies. Child processes
 * run dist/ (`npx tsc -p tsconfig.build.json`).
 */

/** Shortened (default 3 s) in the in-process case, so its takeover waits about a second; the child case runs the default. */
const SHORT_TTL_MS = 1_000;
const BOTH = [SENDING, RECEIVING] as const;

describe("poller: one process polls several chains (anvil 1337 + 1338, redis)", () => {
  const s = usePollerSuite("poller-multi-chain");

  const leaseValue = (chainId: number): Promise<string | null> => s.queues.redis.get(pollerLeaseKey(s.prefix, chainId));
  const prepareJob = (p: UserPrepared) => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey);
  /** The receiving chain's record of the router's prepare there: only 1338's poller writes it. */
  const receivingRecord = async (p: UserPrepared): Promise<true | undefined> =>
    (await s.queues.redis.exists(transferRecordKey(s.prefix, RECEIVING, p.transferKey))) === 1 || undefined;
  /** Both cursors past `block` on their chains (one start block serves both chains: see alignedStartBlock). */
  const cursorsPast = async (blocks: Record<number, number>): Promise<true | undefined> => {
    const cursors = await Promise.all(BOTH.map((id) => storedCursor(s, id)));
    return cursors.every((c, i) => c !== undefined && c.block >= blocks[BOTH[i]]) || undefined;
  };
  const heads = async (): Promise<Record<number, number>> => ({
    [SENDING]: await s.sending.provider.getBlockNumber(),
    [RECEIVING]: await s.receiving.provider.getBlockNumber(),
  });

  /**
   * POLLER_START_BLOCK is one value for every chain of a process: both heads are brought level (empty blocks on the
   * lower chain) and the next block is the start, so neither chain reads the suite's earlier transfers.
   */
  async function alignedStartBlock(): Promise<number> {
    const h = await heads();
    const top = Math.max(h[SENDING], h[RECEIVING]);
    for (const chain of [s.sending, s.receiving]) {
      const behind = top - h[chain.chainId];
      if (behind > 0) await chain.anvil.mine(behind);
    }
    return top + 1;
  }

  const start = async (logs: LogCapture, startBlock: number): Promise<RunningPollers> =>
    s.stopAfterTest(
      await startPollers({
        config: pollerConfig(s, s.prefix),
        logger: logs.logger,
        chainIds: BOTH,
        options: { ...FAST, startBlock, leaseTtlMs: SHORT_TTL_MS },
      }),
    );

  it("polls both chains under two leases; stopped, a standby process of the same chains takes over both", async () => {
    const startBlock = await alignedStartBlock();
    const firstLogs = captureLogs();
    const first = await start(firstLogs, startBlock);
    expect(first.pollers.map((p) => [p.chainId, p.role()])).toEqual([
      [SENDING, "active"],
      [RECEIVING, "active"],
    ]);
    // Two leases, one owner id each: the chains' pollers are independent, though in one process.
    const [a1, a2] = first.pollers;
    expect(await leaseValue(SENDING)).toBe(`${a1.leaseTerm()}|${a1.ownerId}`);
    expect(await leaseValue(RECEIVING)).toBe(`${a2.leaseTerm()}|${a2.ownerId}`);
    expect(a1.ownerId).not.toBe(a2.ownerId);
    // Every chain's line names its chain.
    expect(firstLogs.find("poller.start", "poller started").map((l) => l.chainId)).toEqual([SENDING, RECEIVING]);

    const secondLogs = captureLogs();
    const second = await start(secondLogs, 10 ** 9);
    expect(second.pollers.map((p) => p.role())).toEqual(["standby", "standby"]);

    const p1 = await userPrepare(s, { user: 5 });
    await waitFor("the sending chain's poller's prepare-receiver job", () => prepareJob(p1));
    await routerPrepareReceiver(s, p1);
    await waitFor("the receiving chain's poller's record of the router's prepare", () => receivingRecord(p1));
    expect(secondLogs.find("poller.lease", "poller lease acquired")).toEqual([]);

    await first.stop();
    const stoppedAt = await heads();
    await waitFor(
      "the standby process holding both leases",
      async () => second.pollers.every((p) => p.role() === "active") || undefined,
      10_000,
    );
    // A start block far ahead: had the standby not resumed from the stored cursors, it would miss p2.
    const p2 = await userPrepare(s, { user: 6 });
    await waitFor("the standby's prepare-receiver job", () => prepareJob(p2));
    await routerPrepareReceiver(s, p2);
    await waitFor("the standby's record of the router's prepare on 1338", () => receivingRecord(p2));
    await waitFor("both chains' cursors moved by the standby", () => cursorsPast(stoppedAt));
    expect(
      secondLogs
        .find("poller.lease", "poller lease acquired")
        .map((l) => l.chainId)
        .sort(),
    ).toEqual([SENDING, RECEIVING]);
  });

  it("a SIGKILLed child of CHAIN_ID=1337,1338: one metrics endpoint with both chains, its standby takes both leases", async () => {
    const metricsPort = await getFreePort();
    const startBlock = await alignedStartBlock();
    const spawnBoth = (instance: number, from: number): ManagedProcess =>
      spawnPollerChild(s, { chainId: BOTH, startBlock: from, instance, config: { metricsPort } });
    const holds = async (child: ManagedProcess): Promise<boolean> => {
      const values = await Promise.all(BOTH.map((id) => leaseValue(id)));
      return values.every((v) => (v ?? "").includes(`-${child.pid}-`));
    };
    const first = spawnBoth(0, startBlock);
    await waitForReady(first, () => holds(first), 15_000);
    const second = spawnBoth(1, 10 ** 9);
    await waitFor("both children's heartbeats", () => leaseRoles(["active", "standby"]), 15_000);

    // One endpoint per process, on its first chain's poller port: both chains' series, each metric once.
    const config = { ...pollerConfig(s, s.prefix), metricsPort };
    const port = metricsPortFor(config, "poller", SENDING, 0);
    const metrics = await waitFor("both chains' heads in /metrics", async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return BOTH.every((id) => new RegExp(`^router_chain_head_block\\{[^}]*chain="${id}"`, "m").test(text))
        ? text
        : undefined;
    });
    const helpLines = metrics.split("\n").filter((l) => l.startsWith("# HELP "));
    expect(new Set(helpLines).size).toBe(helpLines.length);
    // The standby's heartbeat is written as its pollers start, which can be before its metrics server listens.
    const readyz = await fetchOnceListening(`http://127.0.0.1:${metricsPortFor(config, "poller", SENDING, 1)}/readyz`);
    expect(readyz.status).toBe(200);
    const checks = ((await readyz.json()) as { checks: unknown[] }).checks;
    for (const id of BOTH) {
      expect(checks).toContainEqual({ name: `poller-lease:${id}`, ok: true, detail: "standby" });
    }

    process.kill(first.pid, "SIGKILL");
    const killedAt = await heads();
    const p1 = await userPrepare(s, { user: 7 }); // mined while nobody polls
    await waitFor("the standby holding both leases", async () => (await holds(second)) || undefined, 15_000);
    await waitFor("the standby's prepare-receiver job", () => prepareJob(p1), 20_000);
    await waitFor("both chains' cursors moved by the standby", () => cursorsPast(killedAt), 20_000);
    await waitFor("the standby's heartbeat: active on both chains", () => leaseRoles([undefined, "active"]), 15_000);
    expect(second.exitStatus()).toBeNull();
  });

  it.each([
    ["1337,abc", 'CHAIN_ID: \\"abc\\" is not a chain id'],
    ["1337,,1338", 'CHAIN_ID: \\"\\" is not a chain id'],
    ["1337,1337", "CHAIN_ID names chain 1337 twice"],
    ["1337,999", "CHAIN_ID 999 is not a key of chainConfig (configured: 1, 1337, 1338)"],
  ])("CHAIN_ID=%s: exits 1 naming the key, before anything connects", async (chainIds, message) => {
    const configFile = join(s.scratchDir, `${s.prefix}-env.json`);
    writeFileSync(configFile, JSON.stringify(pollerConfigJson(s, s.prefix, { logLevel: "info" })));
    const child = s.stopAfterTest(
      spawnRouterProcess({
        name: `poller-env-${chainIds}`,
        main: "poller/main.js",
        configFile,
        env: [`CHAIN_ID=${chainIds}`],
      }),
    );
    const exit = await waitFor("the child's exit", async () => child.exitStatus() ?? undefined, 15_000);
    expect(exit).toEqual({ code: 1, signal: null });
    expect(child.outputTail()).toContain("invalid process environment; not starting");
    expect(child.outputTail()).toContain(message);
    // Nothing started: no lease taken, no heartbeat written.
    expect(await Promise.all(BOTH.map((id) => leaseValue(id)))).toEqual([null, null]);
    expect(await readHeartbeats(s.queues.redis, s.prefix)).toEqual([]);
  });

  /** True once the children's heartbeats (instances 0 and 1) report these lease roles (undefined: not alive). */
  async function leaseRoles(roles: readonly (string | undefined)[]): Promise<boolean | undefined> {
    const beats = await readHeartbeats(s.queues.redis, s.prefix);
    const ok = roles.every((role, i) => {
      const beat = beats.find((h) => h.processId === `poller-${SENDING}+${RECEIVING}-${i}`);
      if (role === undefined) return beat === undefined || !beat.alive;
      return (
        beat?.ready === true &&
        beat.lease?.role === role &&
        beat.chainIds?.join(",") === BOTH.join(",") &&
        beat.lease.chains?.every((c) => c.role === role) === true
      );
    });
    return ok || undefined;
  }
});

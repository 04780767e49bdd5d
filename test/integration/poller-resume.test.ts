import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { TX_JOB, pollerCursorKey } from "../../shared/queues";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { DEFAULT_POLLER_LEASE_TTL_MS } from "../../services/poller/poller-lease";
import { startPoller, type RunningPoller } from "../../services/poller/start-poller";
import { liveChildPids, spawnManaged, waitForReady, type ManagedProcess } from "../harness/child-process";
import {
  FAST,
  RECEIVING,
  SENDING,
  openQueues,
  pollerConfig,
  startPollerStack,
  userPrepare,
  type PollerStack,
  type Queues,
  type UserPrepared,
} from "./poller-fixture";
import { captureLogs, uniquePrefix, waitFor, type CapturedLogger } from "./submitter-fixture";

/**
 * Issue 12 for the poller: ready only once it has taken back what it owns (cursor loaded, a first tick done),
 * and a poller killed mid-work (SIGKILL, then respawned at once as PM2 does) stores its next cursor within the
 * poller lease's TTL + 2 s of the kill (the respawned process is a new lease owner: it waits for the dead one's
 * lease to lapse; poller-lease.ts), with nothing missed or enqueued twice. The child runs dist/ (`npx tsc -p tsconfig.build.json`).
 */

const DIST_MAIN = resolve(__dirname, "../../dist/services/poller/main.js");
const RESUME_BOUND_MS = DEFAULT_POLLER_LEASE_TTL_MS + 2_000;
const USER = 5;

interface StoredCursorJson {
  readonly block: number;
  readonly updatedAtMs: number;
}

describe("poller readiness and resume (anvil 1337 → 1338, redis)", () => {
  let s: PollerStack;
  let queues: Queues;
  let logs: CapturedLogger;
  let prefix: string;
  let dir: string;
  const running: RunningPoller[] = [];
  const children: ManagedProcess[] = [];

  const cursorOf = async (chainId: number): Promise<StoredCursorJson | undefined> => {
    const raw = await queues.redis.get(pollerCursorKey(prefix, chainId));
    return raw === null ? undefined : (JSON.parse(raw) as StoredCursorJson);
  };
  const prepareJob = (p: UserPrepared) => queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey);

  /** The config file the child reads: what pollerConfig loads, as raw JSON. */
  function writeConfigFile(): string {
    const entry = (c: PollerStack["sending"]): Record<string, unknown> => ({
      providers: [c.anvil.url],
      transactionManagerAddress: c.deployment.transactionManager,
      confirmations: 1,
    });
    const raw = {
      adminToken: "integration-test-admin-token",
      mnemonic: s.mnemonic,
      logLevel: "info",
      redisUrl: s.redisUrl,
      redisPrefix: prefix,
      swapPools: [
        {
          assets: [
            { chainId: SENDING, assetId: s.sending.deployment.token },
            { chainId: RECEIVING, assetId: s.receiving.deployment.token },
          ],
        },
      ],
      chainConfig: {
        "1": { providers: [s.sending.anvil.url] },
        [String(SENDING)]: entry(s.sending),
        [String(RECEIVING)]: entry(s.receiving),
      },
    };
    const file = join(dir, `${prefix}.json`);
    writeFileSync(file, JSON.stringify(raw));
    return file;
  }

  function spawnSendingPoller(configFile: string, startBlock: number): ManagedProcess {
    const proc = spawnManaged({
      name: "poller-1337",
      command: "/usr/bin/env",
      args: [
        "-u",
        "ROUTER_ADMIN_TOKEN",
        "-u",
        "ROUTER_MNEMONIC",
        "-u",
        "REDIS_URL",
        `ROUTER_CONFIG_FILE=${configFile}`,
        `CHAIN_ID=${SENDING}`,
        // Shortened (default 1 s): the case restarts the poller repeatedly and waits for each resumed tick.
        "POLLER_INTERVAL_MS=100",
        `POLLER_START_BLOCK=${startBlock}`,
        process.execPath,
        DIST_MAIN,
      ],
    });
    children.push(proc);
    return proc;
  }

  beforeAll(async () => {
    s = await startPollerStack();
    dir = mkdtempSync(join(tmpdir(), "poller-resume-"));
  }, 120_000);

  beforeEach(() => {
    prefix = uniquePrefix();
    queues = openQueues(s.redisUrl, prefix);
    logs = captureLogs();
  });

  afterEach(async () => {
    await Promise.all([...running.splice(0).map((r) => r.stop()), ...children.splice(0).map((c) => c.stop())]);
    await queues.close();
  });

  afterAll(async () => {
    await s?.stack.stop();
    rmSync(dir, { recursive: true, force: true });
    expect(liveChildPids()).toEqual([]);
  });

  it("resolves start only after the cursor is stored and a first tick stored the head", async () => {
    const startedAtMs = Date.now();
    const poller = await startPoller({
      config: pollerConfig(s, prefix),
      logger: logs.logger,
      chainId: SENDING,
      options: { ...FAST, startBlock: 1 },
    });
    running.push(poller);
    const head = await createTransferStore(queues.redis, prefix).getHead(SENDING);
    expect(head?.updatedAtMs).toBeGreaterThanOrEqual(startedAtMs);
    expect(head?.syncedBlock).toBeGreaterThanOrEqual(1);
    expect((await cursorOf(SENDING))?.block).toBe(head?.syncedBlock);
    expect(logs.lines().find((l) => l.at === "poller.ready")).toMatchObject({ chainId: SENDING });
  });

  it("a child poller SIGKILLed mid-work and respawned at once stores its next cursor within the lease TTL + 2 s, missing nothing and enqueuing once", async () => {
    const configFile = writeConfigFile();
    let child = spawnSendingPoller(configFile, (await s.sending.provider.getBlockNumber()) + 1);
    const store = createTransferStore(queues.redis, prefix);
    const spawnedAtMs = Date.now();
    await waitForReady(child, async () => ((await store.getHead(SENDING))?.updatedAtMs ?? 0) > spawnedAtMs, 15_000);

    const live = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver job before the kill", () => prepareJob(live));
    const inFlight = await userPrepare(s, { user: USER });
    process.kill(child.pid, "SIGKILL");
    const killedAtMs = Date.now();
    await waitFor("poller child to die", async () => child.exitStatus() ?? undefined);
    child = spawnSendingPoller(configFile, 10 ** 9); // PM2-like: at once; the stored cursor, not the start block, decides
    const down = await userPrepare(s, { user: 6 }); // mined while the new process boots

    const resumed = await waitFor(
      "the next stored cursor",
      async () => {
        const cursor = await cursorOf(SENDING);
        return cursor !== undefined && cursor.updatedAtMs > killedAtMs && cursor.block >= down.receipt.blockNumber
          ? cursor
          : undefined;
      },
      15_000,
    );
    const resumeMs = resumed.updatedAtMs - killedAtMs;
    console.log(`poller resume: kill → next stored cursor ${resumeMs} ms`);
    expect(resumeMs).toBeLessThanOrEqual(RESUME_BOUND_MS);

    for (const p of [live, inFlight, down]) {
      await waitFor("prepare-receiver job after the restart", () => prepareJob(p));
    }
    await s.sending.anvil.mine(1); // a later tick decides the same records again: still one job each
    await waitFor("a tick past the extra block", async () => {
      const head = await store.getHead(SENDING);
      return (head?.syncedBlock ?? 0) > down.receipt.blockNumber ? true : undefined;
    });
    expect(await queues.count(RECEIVING)).toBe(3);
    expect(child.exitStatus()).toBeNull();
  });
});

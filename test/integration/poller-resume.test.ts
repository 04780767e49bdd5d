import { TX_JOB } from "../../shared/queues";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { DEFAULT_POLLER_LEASE_TTL_MS } from "../../services/poller/poller-lease";
import { waitForReady } from "../harness/child-process";
import {
  RECEIVING,
  SENDING,
  nextTick,
  pollerConfig,
  spawnPollerChild,
  storedCursor,
  startTestPoller,
  usePollerSuite,
  userPrepare,
  type UserPrepared,
} from "./poller-fixture";
import { waitFor } from "../harness/wait";

/**
 * A poller is ready only once it has taken back what it owns (cursor loaded, a first tick done),
 * and a poller killed mid-work (SIGKILL, then respawned at once as PM2 does) stores its next cursor within the
 * poller lease's TTL + 2 s of the kill (the respawned process is a new lease owner: it waits for the dead one's
 * lease to lapse; poller-lease.ts), with nothing missed or enqueued twice. The child runs dist/ (`npx tsc -p tsconfig.build.json`).
 */

const RESUME_BOUND_MS = DEFAULT_POLLER_LEASE_TTL_MS + 2_000;
const USER = 5;

describe("poller readiness and resume (anvil 1337 → 1338, redis)", () => {
  const s = usePollerSuite("poller-resume");

  const prepareJob = (p: UserPrepared) => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey);

  it("resolves start only after the cursor is stored and a first tick stored the head", async () => {
    const startedAtMs = Date.now();
    await startTestPoller(s, { config: pollerConfig(s, s.prefix), chainId: SENDING, options: { startBlock: 1 } });
    const head = await createTransferStore(s.queues.redis, s.prefix).getHead(SENDING);
    expect(head?.updatedAtMs).toBeGreaterThanOrEqual(startedAtMs);
    expect(head?.syncedBlock).toBeGreaterThanOrEqual(1);
    expect((await storedCursor(s, SENDING))?.block).toBe(head?.syncedBlock);
    expect(s.logs.lines().find((l) => l.at === "poller.ready")).toMatchObject({ chainId: SENDING });
  });

  it("a child poller SIGKILLed mid-work and respawned at once stores its next cursor within the lease TTL + 2 s, missing nothing and enqueuing once", async () => {
    let child = spawnPollerChild(s, { chainId: SENDING, startBlock: (await s.sending.provider.getBlockNumber()) + 1 });
    const store = createTransferStore(s.queues.redis, s.prefix);
    const spawnedAtMs = Date.now();
    await waitForReady(child, async () => ((await store.getHead(SENDING))?.updatedAtMs ?? 0) > spawnedAtMs, 15_000);

    const live = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver job before the kill", () => prepareJob(live));
    const inFlight = await userPrepare(s, { user: USER });
    process.kill(child.pid, "SIGKILL");
    const killedAtMs = Date.now();
    await waitFor("poller child to die", async () => child.exitStatus() ?? undefined);
    // PM2-like: at once; the stored cursor, not the start block, decides
    child = spawnPollerChild(s, { chainId: SENDING, startBlock: 10 ** 9 });
    const down = await userPrepare(s, { user: 6 }); // mined while the new process boots

    const resumed = await waitFor(
      "the next stored cursor",
      async () => {
        const cursor = await storedCursor(s, SENDING);
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
    // A whole tick after the jobs decides the same records again: still one job each. The first nextTick starts
    // such a tick; the second resolves once it completed.
    await nextTick(s, SENDING);
    await nextTick(s, SENDING);
    expect(await s.queues.count(RECEIVING)).toBe(3);
    expect(child.exitStatus()).toBeNull();
  });
});

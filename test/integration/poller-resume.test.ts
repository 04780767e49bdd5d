import { TX_JOB } from "../../shared/queues";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { pollerLeaseKey } from "../../shared/coordination/keys";
import { DEFAULT_POLLER_LEASE_TTL_MS } from "../../services/poller/poller-lease";
import { waitForReady, type ManagedProcess } from "../harness/child-process";
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
 * A poller is ready only once it has taken back what it owns (cursor loaded, a first tick done), and a poller
 * killed mid-work (SIGKILL, then respawned at once as PM2 does) resumes through the lease: the respawned process
 * is a new lease owner, takes the dead one's lease once it lapsed (poller-lease.ts) and stores its next cursor
 * within one more lease TTL, with nothing missed or enqueued twice. How fast a kill is recovered end to end (the
 * 5 s target, a new process's boot included) is a benchmark's figure: bench/recovery.ts. The child runs dist/
 * (`npx tsc -p tsconfig.build.json`).
 */

const USER = 5;

/** The JSON log lines a child has written so far, collected on each call: its output tail keeps only ~4 KB. */
function childLogLines(child: ManagedProcess): () => Array<Record<string, unknown>> {
  const seen = new Map<string, Record<string, unknown>>();
  return () => {
    for (const text of child.outputTail().split("\n")) {
      if (text.startsWith("{") && !seen.has(text)) {
        try {
          seen.set(text, JSON.parse(text) as Record<string, unknown>);
        } catch {
          // a line cut by the tail's start, or not yet complete: read whole on a later call
        }
      }
    }
    return [...seen.values()];
  };
}

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

  it("a child poller SIGKILLed mid-work and respawned at once takes the lapsed lease and stores its next cursor within one more lease TTL, missing nothing and enqueuing once", async () => {
    let child = spawnPollerChild(s, { chainId: SENDING, startBlock: (await s.sending.provider.getBlockNumber()) + 1 });
    const store = createTransferStore(s.queues.redis, s.prefix);
    const spawnedAtMs = Date.now();
    await waitForReady(child, async () => ((await store.getHead(SENDING))?.updatedAtMs ?? 0) > spawnedAtMs, 15_000);
    const leaseKey = pollerLeaseKey(s.prefix, SENDING);
    const deadTerm = Number((await s.queues.redis.get(leaseKey))?.split("|")[0]);

    const live = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver job before the kill", () => prepareJob(live));
    const inFlight = await userPrepare(s, { user: USER });
    process.kill(child.pid, "SIGKILL");
    const killedAtMs = Date.now();
    await waitFor("poller child to die", async () => child.exitStatus() ?? undefined);
    // SIGKILL released nothing: the dead owner's lease lapses on its own, when Redis's TTL says (read before the
    // answer, so the lapse is never placed late).
    const readAtMs = Date.now();
    const lapsedAtMs = readAtMs + Math.max(0, await s.queues.redis.pttl(leaseKey));
    // PM2-like: at once; the stored cursor, not the start block, decides
    child = spawnPollerChild(s, { chainId: SENDING, startBlock: 10 ** 9 });
    const logLines = childLogLines(child);
    const down = await userPrepare(s, { user: 6 }); // mined while the new process boots

    const resumed = await waitFor(
      "the next stored cursor",
      async () => {
        logLines();
        const cursor = await storedCursor(s, SENDING);
        return cursor !== undefined && cursor.updatedAtMs > killedAtMs && cursor.block >= down.receipt.blockNumber
          ? cursor
          : undefined;
      },
      // A new node process's boot alone took up to 8.8 s at load 10 on 2 cores; the wait ends at the cursor.
      30_000,
    );
    const { started, taken } = await waitFor("the new poller's started and lease-taken log lines", () => {
      const lines = logLines();
      const startedLine = lines.find((l) => l.at === "poller.start");
      const takenLine = lines.find(
        (l) => l.at === "poller.lease" && String(l.message).startsWith("poller lease acquired"),
      );
      return startedLine && takenLine ? { started: startedLine, taken: takenLine } : undefined;
    });
    // The new process took over the dead one's term through the lease, no other owner in between.
    expect(taken.leaseTerm).toBe(deadTerm + 1);
    // Counted from the moment the lease had lapsed and the new process was up ("poller started", just before its
    // first lease decision): its boot is the loaded machine's, not the lease's, and bench/recovery.ts measures it.
    // From there the keeper takes the lease at its next take (every TTL/4) and its term's first tick runs at once
    // and stores the cursor. A resume that came from anything else (a second lapse, a wait of its own of a lease
    // lifetime or more) would need at least one more TTL; late timers and slow reads on a loaded machine cost a
    // fraction of a second, far from the bound.
    const startedAtMs = Date.parse(String(started.timestamp));
    const upAtMs = Math.max(lapsedAtMs, startedAtMs);
    const sinceUpMs = resumed.updatedAtMs - upAtMs;
    const takenAtMs = Date.parse(String(taken.timestamp));
    console.log(
      `poller resume, ms after the kill: lease lapsed ${lapsedAtMs - killedAtMs}, new process started ` +
        `${startedAtMs - killedAtMs}, lease taken ${takenAtMs - killedAtMs}, next cursor stored ` +
        `${resumed.updatedAtMs - killedAtMs} (${sinceUpMs} after both the lapse and the start)`,
    );
    expect(sinceUpMs).toBeLessThan(DEFAULT_POLLER_LEASE_TTL_MS);

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

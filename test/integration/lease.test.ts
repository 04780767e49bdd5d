import { Redis } from "ioredis";
import { senderLeaseKey } from "../../shared/coordination/keys";
import { createLease, type Fence, type Lease } from "../../shared/coordination/lease";
import { createLeaseLoop, type LeaseLoop } from "../../shared/coordination/lease-loop";
import { createLeaseKeeper, type LeaseKeeper } from "../../services/submitter/lease/lease-keeper";
import { createSenderLease } from "../../services/submitter/lease/sender-lease";
import type { SenderTermStuckError } from "../../services/submitter/send/errors";
import { captureLogs, type LogCapture } from "../harness/logs";
import { useRedis } from "../harness/redis";
import { waitFor } from "../harness/wait";
import { uniquePrefix } from "../harness/prefix";

/**
 * The fenced lease's moving parts on a real Redis, without a worker or a poll loop: the renew-or-take loop both
 * keepers run (shared/coordination/lease-loop.ts), and the submitter's sender lease keeper on it
 * (services/submitter/lease/lease-keeper.ts). End to end: test/fault/takeover.test.ts, poller-lease.test.ts.
 */

// Shortened (shipped: sender lease 1 s, poller lease 3 s; renewals every TTL/4) so that lapses and takeovers happen
// within a unit-sized test; the loop's logic scales with the TTL. The shipped TTLs run end to end in
// test/fault/takeover.test.ts, poller-lease.test.ts and the multi-host bed.
const TTL_MS = 400;
const INTERVAL_MS = TTL_MS / 4;
const CHAIN_ID = 1337;
const SIGNER = "0x1111111111111111111111111111111111111111";

const suite = useRedis();

/** Blocks the event loop for `ms`, as a long synchronous task (a GC pause, a CPU-bound burst) would. */
function busyFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spin
  }
}

/** A minimal keeper around a lease loop: it records what the loop reports and holds what it was handed. */
interface Keeper {
  readonly lease: Lease;
  readonly loop: LeaseLoop;
  readonly logs: LogCapture;
  held: Fence | undefined;
  readonly acquired: Fence[];
  readonly lost: Fence[];
  notAcquired: number;
  mayAcquire: boolean;
}

describe("lease loop (real redis)", () => {
  const keepers: Keeper[] = [];

  const keeper = (key: string, ownerId: string, client: Redis = suite.redis, resumeLapsed = true): Keeper => {
    const lease = createLease({ redis: client, key, termKey: `${key}-term`, ownerId, ttlMs: TTL_MS });
    const logs = captureLogs();
    const k: Keeper = {
      lease,
      logs,
      held: undefined,
      acquired: [],
      lost: [],
      notAcquired: 0,
      mayAcquire: true,
      loop: createLeaseLoop({
        lease,
        intervalMs: INTERVAL_MS,
        logger: logs.logger,
        at: "test.lease",
        leaseName: "test lease",
        held: () => k.held,
        mayAcquire: () => k.mayAcquire,
        onAcquired: (fence) => {
          k.held = fence;
          k.acquired.push(fence);
        },
        onNotAcquired: () => {
          k.notAcquired += 1;
        },
        onLost: (fence) => {
          k.held = undefined;
          k.lost.push(fence);
        },
        resumeLapsed,
      }),
    };
    keepers.push(k);
    return k;
  };

  afterEach(async () => {
    for (const k of keepers.splice(0)) {
      k.loop.halt();
      await k.loop.idle();
    }
  });

  it("a holder keeps its lease past the TTL; once released, the standby takes it at its next tick with a higher term", async () => {
    const key = `${uniquePrefix()}:lease`;
    const a = keeper(key, "a");
    const b = keeper(key, "b");
    await a.loop.tick();
    await b.loop.tick();
    expect(a.acquired).toHaveLength(1);
    expect(b.notAcquired).toBe(1);
    a.loop.start();
    b.loop.start();

    // Eight standby ticks span two TTLs: the holder's renewals must have kept the lease.
    await waitFor("eight standby ticks", () => b.notAcquired >= 8);
    expect(a.lease.current()).toBe(a.acquired[0]);
    await expect(suite.redis.get(key)).resolves.toBe(a.acquired[0].value);

    a.loop.halt();
    await a.loop.idle();
    await a.lease.release();
    // Released, not left to lapse: the key no longer holds a's term (gone, or the standby's already). Read from
    // Redis rather than timed against the TTL, which a loaded machine's late timers could blur.
    expect(await suite.redis.get(key)).not.toBe(a.acquired[0].value);
    const taken = await waitFor("the standby to take the lease", () => b.acquired[0]);
    expect(taken.term).toBeGreaterThan(a.acquired[0].term);
    expect(a.lost).toEqual([]);
  });

  it("a holder whose lease moved on learns it at its next renewal: onLost with its fence, dropped locally", async () => {
    const key = `${uniquePrefix()}:lease`;
    const a = keeper(key, "a");
    await a.loop.tick();
    const fence = a.acquired[0];
    a.loop.start();
    await suite.redis.set(key, `${fence.term + 1}|other`, "PX", 10_000);

    await waitFor("the holder to see the lease lost", () => a.lost.length > 0);
    expect(a.lost).toEqual([fence]);
    expect(a.lease.current()).toBeUndefined();
    // The other owner's value is untouched: a lost holder neither renews nor deletes it.
    await expect(suite.redis.get(key)).resolves.toBe(`${fence.term + 1}|other`);
  });

  it("a holder whose loop stalled past the TTL, the lease unused, resumes it in the same term: no onLost", async () => {
    const key = `${uniquePrefix()}:lease`;
    const a = keeper(key, "a");
    await a.loop.tick();
    const fence = a.acquired[0];
    a.loop.start();
    // A synchronous stall, as a busy event loop: no renewal runs, the key expires in Redis.
    busyFor(TTL_MS * 2.5);
    expect(a.lease.current()).toBeUndefined();

    const resumed = await waitFor("the resume warning", () => a.logs.find("test.lease", "was resumed")[0]);
    expect(resumed).toMatchObject({ level: "warn", leaseTerm: fence.term });
    expect(resumed.message).toMatch(
      /^test lease lapsed during a \d+ ms stall and was resumed: nobody took it, same Redis server$/,
    );
    expect(Number(resumed.stallMs)).toBeGreaterThanOrEqual(TTL_MS);
    expect(a.lost).toEqual([]);
    expect(a.acquired).toEqual([fence]);
    expect(a.lease.current()).toBe(fence);
    await expect(suite.redis.get(key)).resolves.toBe(fence.value);
    await expect(suite.redis.get(`${key}-term`)).resolves.toBe(String(fence.term));
  });

  it("a lapsed lease another owner took, or took and gave up, is not resumed: onLost, the other term untouched", async () => {
    const key = `${uniquePrefix()}:lease`;
    const a = keeper(key, "a");
    const b = keeper(key, "b");
    await a.loop.tick();
    await waitFor("the lease to lapse", async () => (await suite.redis.exists(key)) === 0);
    await b.loop.tick();
    await a.loop.tick();
    expect(a.lost).toEqual([a.acquired[0]]);
    expect(a.logs.find("test.lease", "was not resumed")[0]).toMatchObject({ outcome: "taken" });
    await expect(suite.redis.get(key)).resolves.toBe(b.acquired[0].value);

    // Taken and released meanwhile: the key is gone as after a stall, but the term counter moved.
    const key2 = `${uniquePrefix()}:lease`;
    const c = keeper(key2, "c");
    const d = keeper(key2, "d");
    await c.loop.tick();
    await waitFor("the lease to lapse", async () => (await suite.redis.exists(key2)) === 0);
    await d.loop.tick();
    await d.lease.release();
    await c.loop.tick();
    expect(c.lost).toEqual([c.acquired[0]]);
    expect(c.logs.find("test.lease", "was not resumed")[0]).toMatchObject({ outcome: "term-moved" });
    await expect(suite.redis.exists(key2)).resolves.toBe(0);
  });

  it("a keeper that does not resume (resumeLapsed off) gives a lapsed, unused lease up as before", async () => {
    const key = `${uniquePrefix()}:lease`;
    const a = keeper(key, "a", suite.redis, false);
    await a.loop.tick();
    await waitFor("the lease to lapse", async () => (await suite.redis.exists(key)) === 0);
    await a.loop.tick();
    expect(a.lost).toEqual([a.acquired[0]]);
    await expect(suite.redis.exists(key)).resolves.toBe(0);
  });

  it("takes nothing while the keeper says not now (its previous term is still ending)", async () => {
    const key = `${uniquePrefix()}:lease`;
    const a = keeper(key, "a");
    a.mayAcquire = false;
    await a.loop.tick();
    expect(a.acquired).toEqual([]);
    expect(a.notAcquired).toBe(0);
    await expect(suite.redis.get(key)).resolves.toBeNull();

    a.mayAcquire = true;
    await a.loop.tick();
    await expect(suite.redis.get(key)).resolves.toBe(a.acquired[0].value);
  });

  it("with Redis unreachable a take fails as not acquired, and the warning is logged once per interval", async () => {
    const down = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    const a = keeper(`${uniquePrefix()}:lease`, "a", down);
    await a.loop.tick();
    await a.loop.tick();
    expect(a.notAcquired).toBe(2);
    expect(a.logs.find("test.lease", "cannot read the test lease")).toHaveLength(1);
    down.disconnect();
  });
});

/** A sender lease keeper whose term hooks only record their calls. */
interface Run {
  readonly keeper: LeaseKeeper;
  readonly begun: Fence[];
  readonly stuck: SenderTermStuckError[];
  ended: number;
}

describe("sender lease keeper (real redis)", () => {
  const runs: Run[] = [];

  const run = (
    prefix: string,
    ownerId: string,
    hooks: { onBegin?: (fence: Fence) => Promise<void>; onEnd?: () => Promise<void> } = {},
  ): Run => {
    const lease = createSenderLease({
      redis: suite.redis,
      prefix,
      chainId: CHAIN_ID,
      signerAddress: SIGNER,
      ownerId,
      ttlMs: TTL_MS,
    });
    const r: Run = {
      begun: [],
      stuck: [],
      ended: 0,
      keeper: createLeaseKeeper({
        lease,
        logger: captureLogs().logger,
        intervalMs: INTERVAL_MS,
        // Shortened (shipped 10 s) so the stuck-term case is reached quickly.
        endTimeoutMs: 200,
        onBegin: async (fence) => {
          r.begun.push(fence);
          await hooks.onBegin?.(fence);
        },
        onEnd: async () => {
          r.ended += 1;
          await hooks.onEnd?.();
        },
        onStuck: (err) => r.stuck.push(err),
      }),
    };
    runs.push(r);
    return r;
  };

  afterEach(async () => {
    for (const r of runs.splice(0)) {
      r.keeper.halt();
      await r.keeper.release().catch(() => undefined);
    }
  });

  it("the first to start is the sender (its term begun), the second a standby; both ready", async () => {
    const prefix = uniquePrefix();
    const a = run(prefix, "a");
    const b = run(prefix, "b");
    await a.keeper.start();
    await b.keeper.start();

    expect([a.keeper.role(), b.keeper.role()]).toEqual(["sender", "standby"]);
    expect([a.keeper.isReady(), b.keeper.isReady()]).toEqual([true, true]);
    expect(a.begun).toHaveLength(1);
    expect(b.begun).toEqual([]);
    expect(a.keeper.signal().aborted).toBe(false);
    expect(b.keeper.signal().aborted).toBe(true);
    await expect(suite.redis.get(senderLeaseKey(prefix, CHAIN_ID, SIGNER))).resolves.toBe(a.begun[0].value);
  });

  it("a job sees the term's signal only once its begin has completed (the nonce floor is set then)", async () => {
    const prefix = uniquePrefix();
    let finishBegin: () => void = () => undefined;
    const signalsDuringBegin: boolean[] = [];
    const a = run(prefix, "a", {
      onBegin: () =>
        new Promise<void>((resolve) => {
          finishBegin = resolve;
        }),
    });
    const started = a.keeper.start();
    await waitFor("the begin to start", () => a.begun.length === 1);
    signalsDuringBegin.push(a.keeper.signal().aborted);
    finishBegin();
    await started;
    expect(signalsDuringBegin).toEqual([true]);
    expect(a.keeper.role()).toBe("sender");
    expect(a.keeper.signal().aborted).toBe(false);
  });

  it("a begin that fails gives the lease up, and the next take begins a new term", async () => {
    const prefix = uniquePrefix();
    let failures = 0;
    const a = run(prefix, "a", {
      onBegin: async () => {
        if (failures === 0) {
          failures += 1;
          throw new Error("reconcile failed");
        }
      },
    });
    await a.keeper.start();
    expect(a.keeper.role()).toBe("standby");
    expect(a.ended).toBe(1);

    await waitFor("a second term", () => a.keeper.role() === "sender");
    expect(a.begun.map((f) => f.term)).toEqual([a.begun[0].term, a.begun[0].term + 1]);
    expect(a.keeper.isReady()).toBe(true);
  });

  it("a job that met its lease lapsed learns the verdict: held again after a stall nobody used, not once another owner took it", async () => {
    const prefix = uniquePrefix();
    const key = senderLeaseKey(prefix, CHAIN_ID, SIGNER);
    const a = run(prefix, "a");
    await a.keeper.start();
    const signal = a.keeper.signal();
    busyFor(TTL_MS * 2.5);
    await expect(a.keeper.heldAgain(signal)).resolves.toBe(true);
    expect([a.begun.length, a.ended, signal.aborted]).toEqual([1, 0, false]);
    await expect(suite.redis.get(key)).resolves.toBe(a.begun[0].value);

    await suite.redis.set(key, `${a.begun[0].term + 1}|other`, "PX", 60_000);
    await expect(a.keeper.heldAgain(signal)).resolves.toBe(false);
    expect(signal.aborted).toBe(true);
  });

  it("a lost lease ends the term; a term that cannot end within its bound is stuck: not ready, its signal aborted", async () => {
    const prefix = uniquePrefix();
    const key = senderLeaseKey(prefix, CHAIN_ID, SIGNER);
    const a = run(prefix, "a", { onEnd: () => new Promise<void>(() => undefined) });
    await a.keeper.start();
    const signal = a.keeper.signal();
    await suite.redis.set(key, `${a.begun[0].term + 1}|other`, "PX", 60_000);

    const [err] = await waitFor("the term to be stuck", () => (a.stuck.length > 0 ? a.stuck : undefined));
    expect(err.code).toBe("SENDER_TERM_STUCK");
    expect(signal.aborted).toBe(true);
    expect([a.keeper.role(), a.keeper.isReady()]).toEqual(["standby", false]);
    expect(a.ended).toBe(1);
    await expect(suite.redis.get(key)).resolves.toBe(`${a.begun[0].term + 1}|other`);
  });
});

import { ZeroAddress, keccak256 } from "ethers";
import type { TransferRecord } from "../../shared/protocol/types";
import { readHeartbeats } from "../../shared/metrics/heartbeat";
import { metricsPortFor } from "../../shared/metrics/metrics-port";
import { TX_JOB, transferKey } from "../../shared/queues";
import {
  chainHeadKey,
  pollerCursorKey,
  pollerLeaseKey,
  pollerLeaseTermKey,
  transferRecordKey,
} from "../../shared/coordination/keys";
import { LeaseLostError, createLease, type Fence } from "../../shared/coordination/lease";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { DEFAULT_POLLER_LEASE_TTL_MS } from "../../services/poller/poller-lease";
import { createLogCursorStore } from "../../services/poller/sources/log-cursor";
import type { PollerOptions, RunningPoller } from "../../services/poller/start-poller";
import { waitForReady, type ManagedProcess } from "../harness/child-process";
import { getFreePort } from "../harness/free-port";
import {
  RECEIVING,
  SENDING,
  pollerConfig,
  spawnPollerChild,
  storedCursor,
  startTestPoller,
  usePollerSuite,
  userPrepare,
  type StoredCursor,
  type UserPrepared,
} from "./poller-fixture";
import { fetchOnceListening, waitFor } from "../harness/wait";
import { captureLogs, type LogCapture } from "../harness/logs";
import { busyFor } from "./stall-fixture";

/**
 * One active poller per chain under a fenced Redis lease (docs/poller.md,
 * "One active poller per chain"). Two pollers of one chain: only the lease holder polls and writes; the standby
 * takes over when the holder stops or dies and continues from the stored cursor; a poller whose write is delayed
 * past its lease cannot move the cursor back nor overwrite a newer record. Child processes run dist/
 * (`npx tsc -p tsconfig.build.json`).
 */

/** Shortened (default 3 s) in the in-process cases, so a takeover there waits about a second; the child case runs the default. */
const SHORT_TTL_MS = 1_000;

describe("poller lease: one active poller per chain (anvil 1337 → 1338, redis)", () => {
  const s = usePollerSuite("poller-lease");

  const cursorOf = (): Promise<StoredCursor | undefined> => storedCursor(s, SENDING);
  const leaseValue = (): Promise<string | null> => s.queues.redis.get(pollerLeaseKey(s.prefix, SENDING));
  const prepareJob = (p: UserPrepared) => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey);
  const start = (logs: LogCapture, options: PollerOptions): Promise<RunningPoller> =>
    startTestPoller(s, { config: pollerConfig(s, s.prefix), chainId: SENDING, options, logs });
  /** The sending chain's poller as PM2 instance `instance` (its own metrics port, as under PM2). */
  const spawnSending = (instance: number, startBlock: number, metricsPort: number): ManagedProcess =>
    spawnPollerChild(s, { chainId: SENDING, startBlock, instance, config: { metricsPort } });

  it("only the lease holder ticks and writes; stopped, it hands over to the standby, which continues from the cursor", async () => {
    const startBlock = (await s.sending.provider.getBlockNumber()) + 1;
    let standbyTicks = 0;
    const a = await start(captureLogs(), { startBlock, leaseTtlMs: SHORT_TTL_MS });
    // A start block far ahead: were the standby to start from it instead of the stored cursor, it would miss p2.
    const b = await start(captureLogs(), {
      startBlock: 10 ** 9,
      leaseTtlMs: SHORT_TTL_MS,
      onTick: () => {
        standbyTicks += 1;
      },
    });
    expect([a.role(), b.role()]).toEqual(["active", "standby"]);
    expect(await leaseValue()).toBe(`${a.leaseTerm()}|${a.ownerId}`);

    const p1 = await userPrepare(s, { user: 5 });
    await waitFor("the active poller's prepare-receiver job", () => prepareJob(p1));
    await waitFor("the active poller's cursor past the prepare", async () =>
      ((await cursorOf())?.block ?? -1) >= p1.receipt.blockNumber ? true : undefined,
    );
    expect(standbyTicks).toBe(0);
    expect(b.role()).toBe("standby");
    const termA = Number(a.leaseTerm());

    await a.stop(); // releases the lease: the standby takes it at its next poll (TTL/4), not after the TTL
    const stoppedAtMs = Date.now();
    // Released, not left to lapse: the key no longer holds a's term (it is gone, or the standby's already). Read
    // from Redis rather than timed, so a loaded machine's slow ticks cannot blur a release with a lapse.
    expect(await leaseValue()).not.toBe(`${termA}|${a.ownerId}`);
    const p2 = await userPrepare(s, { user: 6 });
    await waitFor("the standby to become active", () => b.role() === "active", 5_000);
    const resumed = await waitFor("the new holder's cursor past p2", async () => {
      const cursor = await cursorOf();
      return cursor !== undefined && cursor.updatedAtMs > stoppedAtMs && cursor.block >= p2.receipt.blockNumber
        ? cursor
        : undefined;
    });
    console.log(`poller lease: graceful handover → next stored cursor ${resumed.updatedAtMs - stoppedAtMs} ms`);
    await waitFor("the new holder's prepare-receiver job", () => prepareJob(p2));
    await waitFor("the new holder's first completed tick", () => standbyTicks > 0);
    expect(b.leaseTerm()).toBeGreaterThan(termA);
    expect(await s.queues.count(RECEIVING)).toBe(2);
  });

  it("keeps its lease through a first tick slower than the TTL (renewals do not wait for ticks)", async () => {
    const startBlock = (await s.sending.provider.getBlockNumber()) + 1;
    await s.sending.anvil.mine(1);
    const logs = captureLogs();
    let delayed = false;
    const a = await start(logs, {
      startBlock,
      leaseTtlMs: SHORT_TTL_MS,
      // The first cursor save waits two TTLs, as a first sync of many blocks would.
      hooks: {
        beforeCursorSave: async () => {
          if (!delayed) {
            delayed = true;
            await new Promise((r) => setTimeout(r, 2 * SHORT_TTL_MS));
          }
        },
      },
    });
    expect(delayed).toBe(true);
    expect(a.role()).toBe("active");
    expect(await leaseValue()).toBe(`${a.leaseTerm()}|${a.ownerId}`);
    expect(((await cursorOf())?.block ?? -1) >= startBlock).toBe(true);
    expect(logs.find("poller.lease", "lost")).toEqual([]);
  });

  it("an event-loop stall past the default TTL, the lease unused: resumed in the same term, it polls on from its cursor", async () => {
    const startBlock = (await s.sending.provider.getBlockNumber()) + 1;
    const logs = captureLogs();
    const a = await start(logs, { startBlock });
    const term = a.leaseTerm();
    // Synchronous, as a tick decoding thousands of logs: no renewal runs, the key expires in Redis.
    busyFor(DEFAULT_POLLER_LEASE_TTL_MS * 1.5);

    const resumed = await waitFor("the resume", () => logs.find("poller.lease", "was resumed")[0]);
    expect(resumed).toMatchObject({ level: "warn", leaseTerm: term });
    const p1 = await userPrepare(s, { user: 7 });
    await waitFor("the prepare-receiver job", () => prepareJob(p1));
    await waitFor("the cursor past the prepare", async () =>
      ((await cursorOf())?.block ?? -1) >= p1.receipt.blockNumber ? true : undefined,
    );
    expect([a.role(), a.leaseTerm()]).toEqual(["active", term]);
    expect(await leaseValue()).toBe(`${term}|${a.ownerId}`);
    expect(logs.find("poller.lease", "lost")).toEqual([]);
    expect(logs.find("poller.lease", "term ended")).toEqual([]);
    expect(logs.find("poller.lease", "acquired")).toHaveLength(1);
  });

  it("a poller whose cursor write is delayed past its lease cannot move the cursor back", async () => {
    const startBlock = (await s.sending.provider.getBlockNumber()) + 1;
    const logsA = captureLogs();
    let paused: { block: number; resume: () => void } | undefined;
    let armed = false;
    // Long for A (renewed every 5 s), so its own renewal is unlikely to notice the loss before the delayed write
    // runs: the write then reaches Redis with A's old term and the script refuses it.
    const a = await start(logsA, {
      startBlock,
      leaseTtlMs: 20_000,
      hooks: {
        beforeCursorSave: (block) => {
          if (!armed) return Promise.resolve();
          armed = false;
          return new Promise<void>((resume) => {
            paused = { block, resume };
          });
        },
      },
    });
    const b = await start(captureLogs(), { startBlock, leaseTtlMs: SHORT_TTL_MS });
    expect([a.role(), b.role()]).toEqual(["active", "standby"]);

    armed = true;
    const p1 = await userPrepare(s, { user: 7 });
    const pause = await waitFor("A paused before its cursor save", () => paused);
    // What a pause past the TTL ends in: A's lease is gone from Redis and the standby takes it.
    await s.queues.redis.del(pollerLeaseKey(s.prefix, SENDING));
    await waitFor("the standby to become active", () => b.role() === "active", 5_000);
    await s.sending.anvil.mine(2);
    const newer = await waitFor("the new holder's cursor past A's paused block", async () => {
      const cursor = await cursorOf();
      return cursor !== undefined && cursor.block > pause.block ? cursor : undefined;
    });

    pause.resume();
    const refused = await waitFor("A's refused write", () =>
      logsA.lines().find((l) => l.at === "poller.tick" && String(l.error).includes("not written")),
    );
    console.log(`poller lease: A's delayed cursor write refused: ${String(refused.error)}`);
    const after = await cursorOf();
    expect(after?.block).toBeGreaterThanOrEqual(newer.block);
    expect(await leaseValue()).toBe(`${b.leaseTerm()}|${b.ownerId}`);
    await waitFor("A to wait as a standby", () => a.role() === "standby", 10_000);
    await waitFor("one prepare-receiver job", () => prepareJob(p1));
    expect(await s.queues.count(RECEIVING)).toBe(1);
  });

  it("the write scripts refuse an old term atomically: the cursor is not moved back, a newer record not overwritten", async () => {
    const redis = s.queues.redis;
    const key = pollerLeaseKey(s.prefix, SENDING);
    const termKey = pollerLeaseTermKey(s.prefix, SENDING);
    // Short so the old holder's lease lapses within the case; nothing else runs on this prefix.
    const old = createLease({ redis, key, termKey, ownerId: "old", ttlMs: 200 });
    const oldFence = (await old.tryAcquire()) as Fence;
    const next = createLease({ redis, key, termKey, ownerId: "new", ttlMs: 60_000 });
    const newFence = await waitFor("the old lease to lapse", () => next.tryAcquire(), 5_000);
    expect(newFence.term).toBeGreaterThan(oldFence.term);
    // The old holder's view of its fence, as a paused process still has it in memory (its local check passed).
    const stale = (): Fence => oldFence;
    const current = (): Fence => newFence;

    const cursorKey = pollerCursorKey(s.prefix, SENDING);
    await createLogCursorStore(redis, cursorKey, current).reset({ block: 100, hash: "0x01" });
    await expect(createLogCursorStore(redis, cursorKey, stale).reset({ block: 90, hash: "0x02" })).rejects.toThrow(
      LeaseLostError,
    );
    expect(JSON.parse((await redis.get(cursorKey)) ?? "{}")).toMatchObject({ block: 100, hash: "0x01" });

    const record = transferRecord();
    const newStore = createTransferStore(redis, s.prefix, { fence: current });
    expect(await newStore.put(record)).toBe("created");
    expect(await newStore.put({ ...record, status: "Cancelled", cancelTransactionHash: "0x" + "12".repeat(32) })).toBe(
      "updated",
    );
    const recordKey = transferRecordKey(
      s.prefix,
      SENDING,
      transferKey(record.txData.transactionId, record.txData.user),
    );
    const newerJson = await redis.get(recordKey);
    // The merge rules would let this through (same status, another cancel hash): only the fence stops it.
    const staleStore = createTransferStore(redis, s.prefix, { fence: stale });
    await expect(
      staleStore.put({ ...record, status: "Cancelled", cancelTransactionHash: "0x" + "34".repeat(32) }),
    ).rejects.toMatchObject({ code: "LEASE_LOST" });
    await expect(staleStore.setHead(SENDING, { blockNumber: 1, timestamp: 1 })).rejects.toThrow(LeaseLostError);
    expect(await redis.get(recordKey)).toBe(newerJson);

    // A store without a fence source (admin, tools) is unfenced; one whose lease is not held writes nothing.
    const notHeld = createTransferStore(redis, s.prefix, { fence: () => undefined });
    await expect(notHeld.setHead(SENDING, { blockNumber: 2, timestamp: 2 })).rejects.toThrow(LeaseLostError);
    expect(await redis.get(chainHeadKey(s.prefix, SENDING))).toBeNull();
  });

  it("a SIGKILLed active child poller is replaced by its standby within a default lease TTL of its lease lapsing, from the stored cursor", async () => {
    const metricsPort = await getFreePort();
    const startBlock = (await s.sending.provider.getBlockNumber()) + 1;
    const first = spawnSending(0, startBlock, metricsPort);
    await waitForReady(first, async () => ((await leaseValue()) ?? "").includes(`-${first.pid}-`), 15_000);
    const second = spawnSending(1, 10 ** 9, metricsPort);
    const heldBy = async (): Promise<ManagedProcess | undefined> => {
      const value = (await leaseValue()) ?? "";
      return [first, second].find((c) => value.includes(`-${c.pid}-`));
    };
    const p1 = await userPrepare(s, { user: 8 });
    await waitFor("the active child's prepare-receiver job", () => prepareJob(p1));
    expect(await heldBy()).toBe(first);
    // GET /status lists each process's heartbeat: the standby is ready and says it is a standby.
    await waitFor("both children's roles in their heartbeats", () => heartbeatRoles(["active", "standby"]), 15_000);
    const port = metricsPortFor({ ...pollerConfig(s, s.prefix), metricsPort }, "poller", SENDING, 1);
    const readyz = await fetchOnceListening(`http://127.0.0.1:${port}/readyz`);
    expect(readyz.status).toBe(200);
    expect(((await readyz.json()) as { checks: unknown[] }).checks).toContainEqual({
      name: "poller-lease",
      ok: true,
      detail: "standby",
    });

    process.kill(first.pid, "SIGKILL");
    const killedAtMs = Date.now();
    await waitFor("the active child to die", async () => first.exitStatus() ?? undefined);
    // SIGKILL released nothing: the lease lapses when Redis's TTL says (read before the answer: never placed late).
    const readAtMs = Date.now();
    const lapsedAtMs = readAtMs + Math.max(0, await s.queues.redis.pttl(pollerLeaseKey(s.prefix, SENDING)));
    const p2 = await userPrepare(s, { user: 9 }); // mined while nobody polls
    await waitFor(
      "the standby holding the lease",
      async () => ((await heldBy()) === second ? true : undefined),
      15_000,
    );
    const resumed = await waitFor(
      "the standby's cursor past p2",
      async () => {
        const cursor = await cursorOf();
        return cursor !== undefined && cursor.updatedAtMs > killedAtMs && cursor.block >= p2.receipt.blockNumber
          ? cursor
          : undefined;
      },
      20_000,
    );
    const sinceLapseMs = resumed.updatedAtMs - lapsedAtMs;
    console.log(
      `poller lease: SIGKILL of the active → lease lapsed ${lapsedAtMs - killedAtMs} ms, standby's next stored ` +
        `cursor ${resumed.updatedAtMs - killedAtMs} ms (${sinceLapseMs} after the lapse)`,
    );
    // Counted from the lapse (at most a TTL after the kill, by Redis): the standby takes the lease at its next take
    // (every TTL/4) and its term's first tick stores the cursor at once. A takeover by anything else (a second
    // lapse, a wait of a lease lifetime or more) would need another TTL; a loaded machine's late timers and slow
    // reads cost a fraction of a second.
    expect(sinceLapseMs).toBeLessThan(DEFAULT_POLLER_LEASE_TTL_MS);
    await waitFor("the standby's prepare-receiver job", () => prepareJob(p2));
    expect(await s.queues.count(RECEIVING)).toBe(2);
    expect(second.exitStatus()).toBeNull();
    const [, beat] = await waitFor("the new holder's heartbeat", async () => {
      const beats = await readHeartbeats(s.queues.redis, s.prefix);
      const found = beats.find((h) => h.processId === `poller-${SENDING}-1`);
      return found?.lease?.role === "active" ? [beats, found] : undefined;
    });
    expect(beat).toMatchObject({ ready: true, lease: { role: "active", term: expect.any(Number) } });
  });

  it("a SIGSTOPped active child that wakes up after the takeover moves neither the cursor back nor the records", async () => {
    const metricsPort = await getFreePort();
    const startBlock = (await s.sending.provider.getBlockNumber()) + 1;
    const first = spawnSending(0, startBlock, metricsPort);
    await waitForReady(first, async () => ((await leaseValue()) ?? "").includes(`-${first.pid}-`), 15_000);
    const second = spawnSending(1, startBlock, metricsPort);
    await waitFor("both children's roles in their heartbeats", () => heartbeatRoles(["active", "standby"]), 15_000);
    const p1 = await userPrepare(s, { user: 5 });
    await waitFor("the active child's prepare-receiver job", () => prepareJob(p1));

    process.kill(first.pid, "SIGSTOP");
    const p2 = await userPrepare(s, { user: 6 });
    await waitFor(
      "the standby holding the lease",
      async () => (await leaseValue())?.includes(`-${second.pid}-`),
      15_000,
    );
    const newer = await waitFor("the new holder's cursor past p2", async () => {
      const cursor = await cursorOf();
      return cursor !== undefined && cursor.block >= p2.receipt.blockNumber ? cursor : undefined;
    });
    await waitFor("the new holder's prepare-receiver job", () => prepareJob(p2));
    const recordKey = transferRecordKey(s.prefix, SENDING, p2.transferKey);
    const record = await s.queues.redis.get(recordKey);

    process.kill(first.pid, "SIGCONT");
    // The woken child notices at its next renewal (TTL/4) and reports itself a standby in its next heartbeat.
    await waitFor("the woken child to report itself a standby", () => heartbeatRoles(["standby", "active"]), 15_000);
    expect(((await cursorOf())?.block ?? -1) >= newer.block).toBe(true);
    expect(await s.queues.redis.get(recordKey)).toBe(record);
    expect(await leaseValue()).toContain(`-${second.pid}-`);
    expect(await s.queues.count(RECEIVING)).toBe(2);
    expect(first.exitStatus()).toBeNull();
  });

  /** True once the children's heartbeats (instances 0 and 1) report these lease roles, both ready. */
  async function heartbeatRoles(roles: readonly string[]): Promise<boolean | undefined> {
    const beats = await readHeartbeats(s.queues.redis, s.prefix);
    const ok = roles.every((role, i) => {
      const beat = beats.find((h) => h.processId === `poller-${SENDING}-${i}`);
      return beat?.ready === true && beat.lease?.role === role;
    });
    return ok || undefined;
  }
});

function transferRecord(): TransferRecord {
  const user = "0x1111111111111111111111111111111111111111";
  return {
    status: "Prepared",
    chainId: SENDING,
    txData: {
      receivingChainTxManagerAddress: user,
      user,
      router: user,
      initiator: user,
      sendingAssetId: ZeroAddress,
      receivingAssetId: ZeroAddress,
      sendingChainFallback: user,
      callTo: ZeroAddress,
      receivingAddress: user,
      sendingChainId: SENDING,
      receivingChainId: RECEIVING,
      callDataHash: keccak256("0x"),
      transactionId: "0x" + "ab".repeat(32),
      amount: "10",
      expiry: 100,
      preparedBlockNumber: 5,
    },
    encryptedCallData: "0x",
    encodedBid: "0x01",
    bidSignature: "0x02",
    prepareTransactionHash: "0x" + "cd".repeat(32),
    preparedTimestamp: 50,
  };
}

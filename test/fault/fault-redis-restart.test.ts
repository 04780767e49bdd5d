import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sleep } from "../../shared/timing";
import { startE2eStack, stopE2eStack, type E2eStack } from "../e2e/e2e-fixture";
import { startRedis, type RedisServer } from "../harness/redis";
import { assertDistBuilt, startRouterProcs, type RouterProcs } from "./router-procs";
import { auditRouterTxs, describeAudit, fundUsers, runPool, runSwap } from "./swap-audit";

/**
 * Issue 9: Redis restarted mid-run, with append-only persistence as docker-compose.yml runs it. Swaps are in
 * flight when redis-server is SIGKILLed (no clean shutdown), it stays down a moment and comes back on the same
 * port from its append-only file. No job may be lost: every swap completes, with no duplicate router transaction.
 */
const USERS = 4;
const SWAPS = 12;
const DOWN_MS = 2_000;

describe("fault: Redis restart mid-run", () => {
  let s: E2eStack | undefined;
  let redis: RedisServer | undefined;
  let r: RouterProcs | undefined;
  let dir: string;

  beforeAll(async () => {
    assertDistBuilt();
    s = await startE2eStack();
    dir = mkdtempSync(join(tmpdir(), "fault-redis-"));
  }, 120_000);

  afterAll(async () => {
    await r?.stop();
    await redis?.stop();
    await stopE2eStack(s);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("redis-server SIGKILLed with swaps in flight and restarted from its append-only file: every swap completes once", async () => {
    if (!s) throw new Error("no stack");
    const e = s;
    redis = await startRedis({ appendOnlyDir: dir });
    const port = redis.port;
    const users = await fundUsers(e, USERS, SWAPS / USERS);
    const fromBlocks = [await e.sending.provider.getBlockNumber(), await e.receiving.provider.getBlockNumber()];
    r = await startRouterProcs(e, dir, { redisUrl: redis.url });
    const procs = r;
    const swaps = runPool(SWAPS, USERS, (_i, w) => runSwap(users[w], 30_000));
    await sleep(1_500);
    process.kill(redis.pid, "SIGKILL");
    await redis.stop();
    await sleep(DOWN_MS);
    redis = await startRedis({ appendOnlyDir: dir, port });
    const outcomes = await swaps.catch((err: unknown) => {
      throw new Error(
        `a swap did not complete across the Redis restart: ${err instanceof Error ? err.message : String(err)}\n${procs.outputs()}`,
      );
    });
    expect(outcomes).toHaveLength(SWAPS);
    const audits = [
      await auditRouterTxs(e.sending, e.router, fromBlocks[0] + 1),
      await auditRouterTxs(e.receiving, e.router, fromBlocks[1] + 1),
    ];
    process.stdout.write(
      `redis restart: ${outcomes.length} swaps completed; restarts ${[...procs.procs.values()].map((p) => `${p.name} ${p.restarts()}`).join(", ")}\n${audits.map(describeAudit).join("\n")}\n`,
    );
    expect({
      reverted: audits.flatMap((a) => a.reverted),
      duplicates: audits.flatMap((a) => a.duplicates),
      gaps: audits.flatMap((a) => a.nonceGaps),
    }).toEqual({ reverted: [], duplicates: [], gaps: [] });
    expect(audits[1].txs.filter((t) => t.method === "prepare")).toHaveLength(SWAPS);
    expect(audits[0].txs.filter((t) => t.method === "fulfill")).toHaveLength(SWAPS);
  }, 150_000);
});

import { sleep } from "../../shared/timing";
import { startE2eStack, stopE2eStack } from "../e2e/e2e-fixture";
import { startRedis } from "../harness/redis";
import { useStack } from "../harness/stack";
import { waitFor } from "../harness/wait";
import { assertDistBuilt, startRouterProcs } from "./router-procs";
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
  beforeAll(assertDistBuilt);
  const s = useStack({ name: "fault-redis", start: startE2eStack, stop: stopE2eStack });

  it("redis-server SIGKILLed with swaps in flight and restarted from its append-only file: every swap completes once", async () => {
    let redis = await startRedis({ appendOnlyDir: s.scratchDir });
    s.afterTest(() => redis.stop()); // registered first: runs after the processes stopped
    const port = redis.port;
    const users = await fundUsers(s, USERS, SWAPS / USERS);
    const fromBlocks = [await s.sending.provider.getBlockNumber(), await s.receiving.provider.getBlockNumber()];
    const procs = s.stopAfterTest(await startRouterProcs(s, s.scratchDir, { redisUrl: redis.url }));
    const swaps = runPool(SWAPS, USERS, (_i, w) => runSwap(users[w], 30_000));
    // Swaps in flight: a router transaction was broadcast (its job is active in Redis).
    await waitFor(
      "a router transaction broadcast",
      async () =>
        [...procs.procs.values()].some((x) => /"transaction broadcast"/.test(x.output())) ? true : undefined,
      30_000,
    );
    process.kill(redis.pid, "SIGKILL");
    await redis.stop();
    await sleep(DOWN_MS);
    redis = await startRedis({ appendOnlyDir: s.scratchDir, port });
    const outcomes = await swaps.catch((err: unknown) => {
      throw new Error(
        `a swap did not complete across the Redis restart: ${err instanceof Error ? err.message : String(err)}\n${procs.outputs()}`,
      );
    });
    expect(outcomes).toHaveLength(SWAPS);
    const audits = [
      await auditRouterTxs(s.sending, s.router, fromBlocks[0] + 1),
      await auditRouterTxs(s.receiving, s.router, fromBlocks[1] + 1),
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

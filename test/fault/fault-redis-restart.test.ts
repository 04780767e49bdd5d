import { sleep } from "../../shared/timing";
import { startE2eStack, stopE2eStack, type E2eStack } from "../e2e/e2e-fixture";
import { startRedis } from "../harness/redis";
import { useStack } from "../harness/stack";
import { waitFor } from "../harness/wait";
import { assertDistBuilt, startRouterProcs } from "./router-procs";
import { auditRouterTxs, describeAudit, fundUsers, runPool, runSwap } from "./swap-audit";

/**
 * Redis restarted mid-run, with append-only persistence as docker-compose.yml runs it. Swaps are in
 * flight when redis-server is SIGKILLed (no clean shutdown), it stays down a while and comes back on the same
 * port from its append-only file. No job may be lost: every swap completes, with no duplicate router transaction.
 * Twice: a blink (2 s), and an outage longer than every lease, BullMQ's stalled-job check (15 s) and ioredis's
 * reconnect backoff cap (2 s), after which every process must find its way back by itself.
 */
const CASES = [
  { name: "2 s", downMs: 2_000, users: 4, swaps: 12, stepMs: 30_000, timeoutMs: 150_000 },
  { name: "30 s", downMs: 30_000, users: 3, swaps: 3, stepMs: 90_000, timeoutMs: 180_000 },
] as const;

/**
 * Redis back → the router's next transaction: 0.5–1.1 s measured. While BullMQ's connections backed off
 * exponentially (up to 20 s), it was 8.3 s after the 30 s outage (shared/queues/connection.ts, reconnectDelayMs).
 */
const RECOVERY_BOUND_MS = 5_000;

describe("fault: Redis restart mid-run", () => {
  beforeAll(assertDistBuilt);
  const s = useStack({ name: "fault-redis", start: startE2eStack, stop: stopE2eStack });

  it.each(CASES)(
    "redis-server SIGKILLed with swaps in flight, down $name and restarted from its append-only file: every swap completes once",
    async ({ name, downMs, users: userCount, swaps: swapCount, stepMs }) => {
      let redis = await startRedis({ appendOnlyDir: s.scratchDir });
      s.afterTest(() => redis.stop()); // registered first: runs after the processes stopped
      const port = redis.port;
      const users = await fundUsers(s, userCount, swapCount / userCount);
      const fromBlocks = [await s.sending.provider.getBlockNumber(), await s.receiving.provider.getBlockNumber()];
      const procs = s.stopAfterTest(await startRouterProcs(s, s.scratchDir, { redisUrl: redis.url }));
      const swaps = runPool(swapCount, userCount, (_i, w) => runSwap(users[w], stepMs));
      // Swaps in flight: a router transaction was broadcast (its job is active in Redis).
      await waitFor(
        "a router transaction broadcast",
        async () =>
          [...procs.procs.values()].some((x) => /"transaction broadcast"/.test(x.output())) ? true : undefined,
        30_000,
      );
      process.kill(redis.pid, "SIGKILL");
      await redis.stop();
      await sleep(downMs);
      redis = await startRedis({ appendOnlyDir: s.scratchDir, port });
      const backAtMs = Date.now();
      // The router's next transaction on either chain (its pending nonce moves): how long the processes took to
      // find Redis again and act (swaps are in flight, so one follows; undefined, and failed below, if none does).
      const sentBefore = await routerNonces(s);
      const recoveryMs = await waitFor(
        "a router transaction after Redis came back",
        async () => ((await routerNonces(s)) > sentBefore ? Date.now() - backAtMs : undefined),
        stepMs,
      ).catch(() => undefined);
      const outcomes = await swaps.catch((err: unknown) => {
        throw new Error(
          `a swap did not complete across the Redis restart: ${err instanceof Error ? err.message : String(err)}\n${procs.outputs()}`,
        );
      });
      expect(outcomes).toHaveLength(swapCount);
      const audits = [
        await auditRouterTxs(s.sending, s.router, fromBlocks[0] + 1),
        await auditRouterTxs(s.receiving, s.router, fromBlocks[1] + 1),
      ];
      process.stdout.write(
        `redis restart (down ${name}): ${outcomes.length} swaps completed; next broadcast ${recoveryMs ?? "none"} ms after Redis was back; restarts ${[...procs.procs.values()].map((p) => `${p.name} ${p.restarts()}`).join(", ")}\n${audits.map(describeAudit).join("\n")}\n`,
      );
      expect({
        reverted: audits.flatMap((a) => a.reverted),
        duplicates: audits.flatMap((a) => a.duplicates),
        gaps: audits.flatMap((a) => a.nonceGaps),
      }).toEqual({ reverted: [], duplicates: [], gaps: [] });
      expect(audits[1].txs.filter((t) => t.method === "prepare")).toHaveLength(swapCount);
      expect(audits[0].txs.filter((t) => t.method === "fulfill")).toHaveLength(swapCount);
      expect(recoveryMs).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    },
    Math.max(...CASES.map((c) => c.timeoutMs)),
  );
});

/** The router signer's pending nonces on both chains, summed: it grows with every router transaction sent. */
async function routerNonces(s: E2eStack): Promise<number> {
  const counts = await Promise.all(
    [s.sending, s.receiving].map((c) => c.provider.getTransactionCount(s.router, "pending")),
  );
  return counts[0] + counts[1];
}

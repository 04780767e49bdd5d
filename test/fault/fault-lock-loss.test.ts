import { sleep } from "../../shared/timing";
import { Queue } from "bullmq";
import { txQueueName } from "../../shared/queues";
import { RECEIVING, SENDING, startE2eStack, stopE2eStack } from "../e2e/e2e-fixture";
import { useStack } from "../harness/stack";
import { assertDistBuilt, startRouterProcs, type RouterProcs, type Supervised } from "./router-procs";
import { auditRouterTxs, describeAudit, fundUsers, runPool, runSwap } from "./swap-audit";
import { waitFor } from "../harness/wait";

/**
 * Real lock loss with two submitter instances alive. The receiving chain's sending submitter is
 * SIGSTOPped with swaps in flight for longer than its BullMQ job lock and its sender lease (both about a
 * second here, as in production); the standby takes the chain over. The frozen one is then resumed, past its
 * lock, and must send nothing: the swaps complete with one router transaction each and contiguous nonces.
 */
const USERS = 3;
const SWAPS = 9;
const FROZEN_MS = 4_000;

describe("fault: BullMQ lock loss with two submitters alive", () => {
  beforeAll(assertDistBuilt);
  const s = useStack({ name: "fault-lock", start: startE2eStack, stop: stopE2eStack });

  /** The submitter of the chain whose latest "submitter ready" line says it is the sender. */
  const senderOf = (procs: RouterProcs, chainId: number): Supervised | undefined =>
    [...procs.procs.values()].find((p) => {
      if (!p.name.startsWith(`submitter-${chainId}`)) return false;
      const ready = p
        .output()
        .split("\n")
        .filter((l) => l.includes('"submitter ready"'));
      return ready.length > 0 && ready[ready.length - 1].includes('"role":"sender"');
    });

  /** Every failed job of both chains' queues, with its reason. */
  const failedJobs = async (procs: RouterProcs): Promise<string[]> => {
    const failed: string[] = [];
    for (const chainId of [SENDING, RECEIVING]) {
      const queue = new Queue(txQueueName(chainId), { connection: procs.redis, prefix: procs.prefix });
      for (const job of await queue.getFailed()) failed.push(`${String(job.id)}: ${job.failedReason}`);
      await queue.close();
    }
    return failed;
  };

  it("the sender SIGSTOPped past its lock, the standby takes over; resumed, it sends nothing", async () => {
    const users = await fundUsers(s, USERS, SWAPS / USERS);
    const fromBlocks = [await s.sending.provider.getBlockNumber(), await s.receiving.provider.getBlockNumber()];
    const procs = s.stopAfterTest(await startRouterProcs(s, s.scratchDir, { standbys: 1 }));
    const fail =
      (what: string) =>
      (err: unknown): never => {
        throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}\n${procs.outputs()}`);
      };
    const sender = await waitFor(`a sender on ${RECEIVING}`, async () => senderOf(procs, RECEIVING), 15_000).catch(
      fail("no submitter said it is the sender"),
    );
    const standby = [...procs.procs.values()].find((p) => p.name.startsWith(`submitter-${RECEIVING}`) && p !== sender);
    if (!standby) throw new Error("no standby");
    const swaps = runPool(SWAPS, USERS, (_i, w) => runSwap(users[w], 45_000));
    // Work in flight on the receiving chain: the first router prepare was broadcast.
    await waitFor(
      "the sender broadcasting",
      async () => (/"transaction broadcast"/.test(sender.output()) ? true : undefined),
      30_000,
    ).catch(fail("no broadcast"));
    sender.signal("SIGSTOP");
    const stoppedAtMs = Date.now();
    await waitFor(
      "the standby became the sender",
      async () =>
        senderOf(procs, RECEIVING) === standby || /"transaction broadcast"/.test(standby.output()) ? true : undefined,
      15_000,
    ).catch(fail("the standby never took over"));
    const takeoverMs = Date.now() - stoppedAtMs;
    await sleep(Math.max(0, FROZEN_MS - takeoverMs));
    const beforeResume = sender.output().length;
    sender.signal("SIGCONT");
    const outcomes = await swaps.catch(fail("a swap did not complete"));
    // The resumed process logged after waking (a positive signal that it ran again) …
    await waitFor(
      "the resumed process running again",
      async () => (sender.output().length > beforeResume ? true : undefined),
      15_000,
    ).catch(fail("resumed process silent"));
    const audits = [
      await auditRouterTxs(s.sending, s.router, fromBlocks[0] + 1),
      await auditRouterTxs(s.receiving, s.router, fromBlocks[1] + 1),
    ];
    const afterResume = sender.output().slice(beforeResume);
    process.stdout.write(
      `lock loss: ${outcomes.length} swaps; standby sending ${takeoverMs} ms after the SIGSTOP\n${audits.map(describeAudit).join("\n")}\n`,
    );
    // … and decided no broadcast after it woke. A send whose lease check passed before the SIGSTOP may complete
    // (and log) only after the SIGCONT: those are the persisted bytes already on their way, never a new decision.
    const decidedAfterStop = afterResume
      .split("\n")
      .filter((line) => line.includes('"transaction broadcast"'))
      .map((line) => JSON.parse(line.slice(line.indexOf("{"))) as { leaseCheckedAtMs?: number })
      .filter((entry) => entry.leaseCheckedAtMs === undefined || entry.leaseCheckedAtMs >= stoppedAtMs);
    expect(decidedAfterStop).toEqual([]);
    expect({
      reverted: audits.flatMap((a) => a.reverted),
      duplicates: audits.flatMap((a) => a.duplicates),
      gaps: audits.flatMap((a) => a.nonceGaps),
    }).toEqual({ reverted: [], duplicates: [], gaps: [] });
    // A job whose transaction is on chain is never reported failed after the lock loss.
    expect(await failedJobs(procs)).toEqual([]);
    expect(audits[1].txs.filter((t) => t.method === "prepare")).toHaveLength(SWAPS);
    expect(audits[0].txs.filter((t) => t.method === "fulfill")).toHaveLength(SWAPS);
    expect(takeoverMs).toBeLessThan(5_000);
  }, 150_000);
});

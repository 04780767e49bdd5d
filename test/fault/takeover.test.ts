import type { Job } from "bullmq";
import { isTxJobProgress, type TxJobData, type TxJobProgress, type TxJobResult } from "../../shared/queues";
import { CHAIN_ID, type ConfigParams, type TxQueueClient } from "../integration/submitter-fixture";
import {
  assertDistBuilt,
  spawnSubmitterChild,
  submitterCase,
  useSubmitterSuite,
  type SubmitterCase,
  type SubmitterChild,
} from "./fault-fixture";
import { waitFor } from "../harness/wait";
import { isMessage } from "../harness/logs";

/**
 * Submitter takeover in about a second, with real processes, Redis and anvil. The sender lease has a
 * 1 s TTL here (SUBMITTER_LEASE_TTL_MS, as in production); BullMQ's job lock keeps its 30 s default, so a
 * takeover within 5 s proves the new holder took the job back itself instead of waiting for the lock.
 */
const TAKEOVER_BOUND_MS = 5_000;

describe("submitter takeover (child processes)", () => {
  beforeAll(assertDistBuilt);
  const s = useSubmitterSuite("submitter-takeover");

  const spawn = (name: string, configFile: string, instance: number): SubmitterChild =>
    s.stopAfterTest(spawnSubmitterChild({ name, configFile, chainId: CHAIN_ID, instance }));
  const ready = (c: SubmitterChild, role: string): Promise<Record<string, unknown>> =>
    c.waitForLine(`${c.name} ready as ${role}`, (l) => l.message === "submitter ready" && l.role === role);
  const nonceOf = (tag: "latest" | "pending"): Promise<number> => s.chain.provider.getTransactionCount(s.signer, tag);
  const broadcastOf = (q: TxQueueClient, id: string): Promise<TxJobProgress> =>
    waitFor("the broadcast progress event", async () => q.progress.get(id)?.find(isTxJobProgress), 30_000);
  /** The test's case (submitterCase) with mining held, and the signer's nonce before it. */
  const caseWithMiningHeld = async (params: ConfigParams = {}): Promise<SubmitterCase & { nonceBefore: number }> => {
    const c = await submitterCase(s, params);
    const nonceBefore = await nonceOf("latest");
    await s.chain.anvil.setAutomine(false);
    return { ...c, nonceBefore };
  };
  const addJob = async (
    q: TxQueueClient,
    amount: string,
  ): Promise<{ job: Job<TxJobData, TxJobResult>; id: string }> => {
    const job = await q.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount,
      recipientAddress: s.routerRecipient,
    });
    return { job, id: job.id ?? "" };
  };
  /** Exactly one of the job's transactions is mined, and it is the job's result. */
  const expectOneMined = async (q: TxQueueClient, id: string, resultHash: string): Promise<void> => {
    const record = await q.record(id);
    const hashes = [...new Set(record?.attempts.map((a) => a.hash) ?? [])];
    const receipts = await Promise.all(hashes.map((h) => s.chain.provider.getTransactionReceipt(h)));
    expect(receipts.filter((r) => r !== null).map((r) => r?.hash)).toEqual([resultHash]);
  };

  /**
   * `taker` resumes the job's persisted transaction; with mining back on, the job completes within the bound of
   * the kill, with the hash that was broadcast before it: one transaction mined, one nonce used.
   */
  const expectTakenOver = async (p: {
    taker: SubmitterChild;
    q: TxQueueClient;
    job: Job<TxJobData, TxJobResult>;
    sent: TxJobProgress;
    killedAtMs: number;
    nonceBefore: number;
  }): Promise<void> => {
    await p.taker.waitForLine(
      `${p.taker.name} to resume the job`,
      isMessage("resuming the job's persisted transaction"),
      TAKEOVER_BOUND_MS,
    );
    await s.chain.anvil.setAutomine(true);
    await s.chain.anvil.mine(1);
    const result = await p.job.waitUntilFinished(p.q.events, TAKEOVER_BOUND_MS);
    expect(Date.now() - p.killedAtMs).toBeLessThan(TAKEOVER_BOUND_MS);
    expect(result.transactionHash).toBe(p.sent.transactionHash);
    await expectOneMined(p.q, p.job.id ?? "", result.transactionHash);
    await expect(nonceOf("latest")).resolves.toBe(p.nonceBefore + 1);
  };

  it("a sender SIGKILLed mid-job is replaced by its restart: the job completes within 5 s, one transaction mined", async () => {
    const { configFile, q, nonceBefore } = await caseWithMiningHeld();
    const first = spawn("first", configFile, 0);
    await ready(first, "sender");
    const { job, id } = await addJob(q, "41");
    const sent = await broadcastOf(q, id);

    first.child.kill("SIGKILL");
    const killedAtMs = Date.now();
    await first.exited;
    // PM2 restarts the process: same instance number, a new identity.
    const restarted = spawn("restarted", configFile, 0);
    await expectTakenOver({ taker: restarted, q, job, sent, killedAtMs, nonceBefore });
    expect(restarted.lines()).toContainEqual(
      expect.objectContaining({
        message: "took over the previous sender's active jobs: they resume from their records",
        jobs: 1,
      }),
    );
  });

  it("a standby takes over from a SIGKILLed sender that never comes back: the job completes within 5 s", async () => {
    const { configFile, q, nonceBefore } = await caseWithMiningHeld();
    const sender = spawn("sender", configFile, 0);
    await ready(sender, "sender");
    const standby = spawn("standby", configFile, 1);
    await ready(standby, "standby");
    const { job, id } = await addJob(q, "42");
    const sent = await broadcastOf(q, id);
    expect(standby.lines().filter(isMessage("transaction broadcast"))).toEqual([]);

    sender.child.kill("SIGKILL");
    const killedAtMs = Date.now();
    await sender.exited;
    const acquired = await standby.waitForLine(
      "the standby to take the lease",
      isMessage("sender lease acquired: this process sends for the chain"),
      TAKEOVER_BOUND_MS,
    );
    await expectTakenOver({ taker: standby, q, job, sent, killedAtMs, nonceBefore });
    expect(await q.record(id)).toMatchObject({ status: "confirmed", owner: { term: acquired.leaseTerm } });
  });

  it("a SIGSTOPped sender resumed after its job was taken over sends nothing", async () => {
    // A short bump timer: on waking, the old sender's first wish is to bump (sign and send a replacement).
    const { configFile, q, nonceBefore } = await caseWithMiningHeld({ confirmationTimeoutMs: 1500 });
    const paused = spawn("paused", configFile, 0);
    await ready(paused, "sender");
    const standby = spawn("standby", configFile, 1);
    await ready(standby, "standby");
    const { job, id } = await addJob(q, "43");
    await broadcastOf(q, id);

    paused.child.kill("SIGSTOP");
    await standby.waitForLine(
      "the standby to resume the job",
      isMessage("resuming the job's persisted transaction"),
      TAKEOVER_BOUND_MS,
    );
    // Let the new holder bump at least once (past the 1.5 s timer) so the old one wakes far behind.
    await standby.waitForLine("the new holder's bump", isMessage("fee bumped"), 10_000);
    await s.chain.anvil.setAutomine(true);
    await s.chain.anvil.mine(1);
    const result = await job.waitUntilFinished(q.events, 10_000);

    const linesBeforeResume = paused.lines().length;
    paused.child.kill("SIGCONT");
    await paused.waitForLine(
      "the old sender to see its lease lost",
      isMessage("sender lease lost: sending stops, the job goes back to the new holder"),
      10_000,
      linesBeforeResume,
    );
    await paused.waitForLine("the old sender's term to end", isMessage("sender term ended"), 10_000, linesBeforeResume);

    const after = paused.lines().slice(linesBeforeResume);
    expect(after.filter((l) => l.message === "transaction broadcast" || l.message === "fee bumped")).toEqual([]);
    await expectOneMined(q, id, result.transactionHash);
    await expect(nonceOf("latest")).resolves.toBe(nonceBefore + 1);
    await expect(nonceOf("pending")).resolves.toBe(nonceBefore + 1);
    const record = await q.record(id);
    const standbyOwner = (await ready(standby, "standby")).ownerId;
    expect(record).toMatchObject({ status: "confirmed", owner: { id: standbyOwner } });
    // Every transaction of the job is in its record: nothing was signed and sent outside it.
    expect(
      standby
        .lines()
        .filter(isMessage("transaction broadcast"))
        .every((l) => record?.attempts.some((a) => a.hash === l.transactionHash)),
    ).toBe(true);
  });
});

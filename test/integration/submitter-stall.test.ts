import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { assertDistBuilt, spawnSubmitterChild, submitterCase, useSubmitterSuite } from "../fault/fault-fixture";
import { captureLogs, isMessage, type LogCapture } from "../harness/logs";
import { waitFor } from "../harness/wait";
import { CHAIN_ID, submitterConfig } from "./submitter-fixture";
import {
  STALL_MS,
  addJobs,
  broadcastCount,
  busyFor,
  expectEachSentOnce,
  expectNoStrayBroadcast,
  outcomes,
} from "./stall-fixture";

/**
 * A sender whose event loop stalls past its lease's TTL (1 s, shipped) with jobs in flight: the sender runs in the
 * test process, so a synchronous busy loop in the test stalls it, renewals included, and the lease key expires in
 * Redis. Nobody took it, same Redis server: the lease is resumed in the same term, no job is handed back, no nonce
 * reconcile; before, the term ended and every job re-ran, which under load livelocked the submitter
 * (docs/operating.md, "Submitter lease livelock"). A standby that takes the lease during the stall wins: the
 * stalled sender's term ends and its jobs go to the standby. The replaced-server case is
 * test/adversarial/stall-failover.test.ts.
 */
const JOBS = 40;

describe("submitter: an event-loop stall past the sender lease's TTL", () => {
  beforeAll(assertDistBuilt);
  const s = useSubmitterSuite("submitter-stall");

  const startSender = async (prefix: string, logs: LogCapture): Promise<RunningSubmitter> => {
    const submitter = await startSubmitter({
      config: submitterConfig(s, prefix).config,
      logger: logs.logger,
      chainId: CHAIN_ID,
      // Receipts polled every 100 ms (default 1 s); the lease and everything else at the shipped defaults.
      options: { pollIntervalMs: 100 },
    });
    s.afterTest(() => submitter.stop());
    return submitter;
  };

  it("nobody took the lease: resumed in the same term, no job handed back, each sent once at contiguous nonces", async () => {
    const c = await submitterCase(s);
    const logs = captureLogs();
    const sender = await startSender(c.prefix, logs);
    expect(sender.role()).toBe("sender");
    const nonceBefore = await s.chain.provider.getTransactionCount(s.signer, "latest");
    await s.chain.anvil.setAutomine(false);
    const jobs = await addJobs(s, c.q, JOBS);
    await waitFor("the first broadcasts", () => broadcastCount(c.q, jobs) >= 5);
    const broadcastBefore = broadcastCount(c.q, jobs);
    busyFor(STALL_MS);

    const resumed = await waitFor("the lease resumed", () => logs.find("submitter.lease", "was resumed")[0]);
    expect(resumed).toMatchObject({ level: "warn", leaseTerm: logs.find("submitter.lease", "acquired")[0].leaseTerm });
    expect(Number(resumed.stallMs)).toBeGreaterThan(1_000);
    await s.chain.anvil.setAutomine(true);
    await s.chain.anvil.mine(1);
    const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(c.q.events, 60_000)));

    await expectEachSentOnce(s, c.q, jobs, results, nonceBefore);
    expectNoStrayBroadcast(logs.lines(), results);
    // One term from start to end: no loss, no second take, no reconcile, no job handed back.
    expect(logs.find("submitter.lease", "sender lease lost")).toEqual([]);
    expect(logs.find("submitter.lease", "sender term ended")).toEqual([]);
    expect(logs.find("submitter.lease", "sender lease acquired")).toHaveLength(1);
    // The one reconcile is the term's begin, at start.
    expect(logs.find("submitter.nonce", "nonce reconcile")).toHaveLength(1);
    expect(outcomes(logs, "handover")).toEqual([]);
    const ranOn = logs.find("submitter.lease", "runs on from its record").length;
    process.stdout.write(
      `submitter stall: ${broadcastBefore}/${JOBS} jobs broadcast before the ${STALL_MS} ms stall; lease resumed after ` +
        `${String(resumed.stallMs)} ms; ${ranOn} runs met the lapse and ran on in the same term\n`,
    );
  }, 120_000);

  it("a standby took the lease during the stall: no resume; the stalled sender's jobs go to it, nothing sent twice", async () => {
    const c = await submitterCase(s);
    const logs = captureLogs();
    await startSender(c.prefix, logs);
    const standby = s.stopAfterTest(
      spawnSubmitterChild({ name: "standby", configFile: c.configFile, chainId: CHAIN_ID, instance: 1 }),
    );
    await standby.waitForLine("standby ready", (l) => l.message === "submitter ready" && l.role === "standby");
    const nonceBefore = await s.chain.provider.getTransactionCount(s.signer, "latest");
    await s.chain.anvil.setAutomine(false);
    const jobs = await addJobs(s, c.q, JOBS);
    await waitFor("the first broadcasts", () => broadcastCount(c.q, jobs) >= 5);
    busyFor(STALL_MS);

    const taken = await standby.waitForLine(
      "the standby's term",
      isMessage("sender lease acquired: this process sends for the chain"),
    );
    const notResumed = await waitFor("the sender's verdict", () => logs.find("submitter.lease", "was not resumed")[0]);
    expect(notResumed).toMatchObject({ outcome: "taken" });
    await waitFor("the sender's term to end", () => logs.find("submitter.lease", "sender term ended")[0]);
    expect(logs.find("submitter.lease", "was resumed")).toEqual([]);
    expect(Number(taken.leaseTerm)).toBeGreaterThan(Number(notResumed.leaseTerm));
    await s.chain.anvil.setAutomine(true);
    await s.chain.anvil.mine(1);
    const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(c.q.events, 60_000)));

    await expectEachSentOnce(s, c.q, jobs, results, nonceBefore);
    expectNoStrayBroadcast([...logs.lines(), ...standby.lines()], results);
  }, 120_000);
});

import { Wallet } from "ethers";
import type { SendHookPoint } from "../../services/submitter/send/send-context";
import { Queue } from "bullmq";
import { LEDGER_QUEUE_NAME, type BookTransactionJobData } from "../../shared/queues";
import { nonceKey } from "../../shared/coordination/keys";
import { CHAIN_ID } from "../integration/submitter-fixture";
import { HOOK_ENTRY, assertDistBuilt, spawnSubmitterChild, submitterCase, useSubmitterSuite } from "./fault-fixture";
import { isMessage } from "../harness/logs";

/**
 * The submitter is SIGKILLed at each crash point of the send pipeline (a hook of the test entry kills
 * the process the first time a job reaches the point); a restarted process must complete the job with exactly
 * one of its transactions mined and leave no nonce gap.
 */
interface Case {
  readonly point: SendHookPoint;
  /** Reaching the point needs a bump: mining is held until the restart resumes the job. */
  readonly holdMining?: boolean;
}

const CASES: readonly Case[] = [
  { point: "before-persist" },
  { point: "after-persist" },
  { point: "after-broadcast" },
  { point: "bump-persisted", holdMining: true },
  { point: "confirmations-wait" },
  { point: "after-confirmed-saved" },
];

describe("submitter crash points (child processes)", () => {
  beforeAll(assertDistBuilt);
  const s = useSubmitterSuite("submitter-crash-points");

  it.each(CASES)(
    "SIGKILL at $point: the restart completes the job, one transaction mined, no nonce gap",
    async ({ point, holdMining }) => {
      const { prefix, configFile, q } = await submitterCase(s, { confirmationTimeoutMs: holdMining ? 1000 : 60_000 });
      const nonceBefore = await s.chain.provider.getTransactionCount(s.signer, "latest");
      if (holdMining) {
        await s.chain.anvil.setAutomine(false);
      }

      const crashing = s.stopAfterTest(
        spawnSubmitterChild({
          name: `crash-at-${point}`,
          configFile,
          chainId: CHAIN_ID,
          instance: 0,
          entry: HOOK_ENTRY,
          env: { FAULT_CRASH_AT: point },
        }),
      );
      const job = await q.addRemoveLiquidity({
        assetId: s.chain.deployment.token,
        amount: "9",
        // Each case its own withdrawal: an identical one mined since a job's creation counts as that job's own.
        recipientAddress: Wallet.createRandom().address,
      });
      const id = job.id ?? "";
      await crashing.exited;
      expect(crashing.child.signalCode).toBe("SIGKILL");
      expect(crashing.lines()).toContainEqual(
        expect.objectContaining({ message: "fault hook: SIGKILL", point, jobId: id }),
      );

      const restarted = s.stopAfterTest(
        spawnSubmitterChild({ name: `restart-after-${point}`, configFile, chainId: CHAIN_ID, instance: 0 }),
      );
      if (holdMining) {
        await restarted.waitForLine(
          "the restart to resume the job",
          isMessage("resuming the job's persisted transaction"),
          10_000,
        );
        await s.chain.anvil.setAutomine(true);
        await s.chain.anvil.mine(1);
      }
      const result = await job.waitUntilFinished(q.events, 15_000).catch((err: Error) => {
        throw new Error(`${err.message}\n--- restart output ---\n${restarted.output().slice(-4000)}`);
      });

      const record = await q.record(id);
      const hashes = [...new Set(record?.attempts.map((a) => a.hash) ?? [])];
      const receipts = await Promise.all(hashes.map((h) => s.chain.provider.getTransactionReceipt(h)));
      expect(receipts.filter((r) => r !== null).map((r) => r?.hash)).toEqual([result.transactionHash]);
      expect(record).toMatchObject({ status: "confirmed" });
      const [latest, pending] = await Promise.all([
        s.chain.provider.getTransactionCount(s.signer, "latest"),
        s.chain.provider.getTransactionCount(s.signer, "pending"),
      ]);
      expect(latest).toBe(nonceBefore + 1);
      expect(pending).toBe(latest);
      const stored = Number(await q.redis.get(nonceKey(prefix, CHAIN_ID, s.signer)));
      expect(stored).toBeLessThanOrEqual(latest);
    },
  );

  it("SIGKILL between the confirmed record and the ledger naming: the restart names the transaction, once", async () => {
    const { prefix, configFile, q } = await submitterCase(s);
    const env = { FAULT_LEDGER: "on" };
    const crashing = s.stopAfterTest(
      spawnSubmitterChild({
        name: "crash-before-naming",
        configFile,
        chainId: CHAIN_ID,
        instance: 0,
        entry: HOOK_ENTRY,
        env: { ...env, FAULT_CRASH_AT: "after-confirmed-saved" },
      }),
    );
    const job = await q.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "9",
      recipientAddress: Wallet.createRandom().address,
    });
    await crashing.exited;
    expect(crashing.child.signalCode).toBe("SIGKILL");
    const ledger = new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, { connection: q.redis, prefix });
    try {
      // Killed after the record said confirmed, before the naming: nothing named yet.
      expect(await ledger.getJobCountByTypes("waiting")).toBe(0);
      s.stopAfterTest(
        spawnSubmitterChild({
          name: "restart-names",
          configFile,
          chainId: CHAIN_ID,
          instance: 0,
          entry: HOOK_ENTRY,
          env,
        }),
      );
      const result = await job.waitUntilFinished(q.events, 15_000);
      const named = (await ledger.getJobs(["waiting"])).map((j) => j.data);
      expect(named).toEqual([
        {
          chainId: CHAIN_ID,
          hash: result.transactionHash,
          source: "submitter",
          kind: "remove-liquidity",
          requestId: (job.data as { requestId?: string }).requestId,
        },
      ]);
    } finally {
      await ledger.close();
    }
  });

  it("SIGKILL with 20 jobs in flight: every job completes once, on 20 consecutive nonces, no gap", async () => {
    const { configFile, q } = await submitterCase(s);
    const nonceBefore = await s.chain.provider.getTransactionCount(s.signer, "latest");
    const crashing = s.stopAfterTest(
      spawnSubmitterChild({
        name: "crash-mid-batch",
        configFile,
        chainId: CHAIN_ID,
        instance: 0,
        entry: HOOK_ENTRY,
        env: { FAULT_CRASH_AT: "after-persist", FAULT_CRASH_SKIP: "7" },
      }),
    );
    await crashing.waitForLine("the first process to start", isMessage("submitter ready"));
    const jobs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        q.addRemoveLiquidity({
          assetId: s.chain.deployment.token,
          amount: String(200 + i),
          recipientAddress: s.routerRecipient,
        }),
      ),
    );
    await crashing.exited;
    expect(crashing.child.signalCode).toBe("SIGKILL");

    s.stopAfterTest(spawnSubmitterChild({ name: "restart-mid-batch", configFile, chainId: CHAIN_ID, instance: 0 }));
    const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(q.events, 20_000)));

    const nonces = await Promise.all(
      results.map(async (r) => (await s.chain.provider.getTransaction(r.transactionHash))?.nonce ?? -1),
    );
    expect([...nonces].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => nonceBefore + i));
    for (const job of jobs) {
      const record = await q.record(job.id ?? "");
      const receipts = await Promise.all(
        [...new Set(record?.attempts.map((a) => a.hash))].map((h) => s.chain.provider.getTransactionReceipt(h)),
      );
      expect(receipts.filter((r) => r !== null)).toHaveLength(1);
    }
    await expect(s.chain.provider.getTransactionCount(s.signer, "pending")).resolves.toBe(nonceBefore + 20);
    await expect(s.chain.provider.getTransactionCount(s.signer, "latest")).resolves.toBe(nonceBefore + 20);
  });
});

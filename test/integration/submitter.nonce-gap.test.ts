import { startSubmitter, type RunningSubmitter, type SubmitterOptions } from "../../services/submitter/start-submitter";
import { SenderLeaseLostError } from "../../services/submitter/send/errors";
import { createNonceStore } from "../../services/submitter/send/nonce-store";
import { createTxRecordStore, newTxRecord } from "../../services/submitter/send/tx-record";
import { createSenderLease } from "../../services/submitter/lease/sender-lease";
import { Queue } from "bullmq";
import { fillerJobId } from "../../services/submitter/send/fill-nonce-gap";
import { LEDGER_QUEUE_NAME, type BookTransactionJobData } from "../../shared/queues";
import { nonceKey } from "../../shared/coordination/keys";
import { ledgerWithDefaults } from "../../shared/config";
import { liveChildPids } from "../harness/child-process";
import {
  CHAIN_ID,
  startSubmitterStack,
  storeUnsentTransaction,
  submitterConfig,
  txQueueClient,
  type SubmitterStack,
  type TxQueueClient,
} from "./submitter-fixture";
import { waitFor } from "../harness/wait";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * A nonce gap is closed. Reproduced as reported: the stored next nonce is one above the chain's
 * pending count, so the next job is sent behind a nonce no node has; the sender's tracker fills the gap.
 * Also: the sender lease's fencing refuses writes of a holder that lost it.
 */
// Shortened (defaults: 1 s polls, 10 s gap bound) so each gap case resolves in well under a second; the defaults are
// exercised by the real-SDK swaps (test/e2e/sdk.test.ts, pm2-sdk.test.ts).
const GAP: SubmitterOptions = { pollIntervalMs: 50, nonceGapBoundMs: 1000, providerOptions: { headRefreshMs: 200 } };

describe("nonce gap and sender fencing (in-process)", () => {
  let s: SubmitterStack;
  let client: TxQueueClient | undefined;
  const running: RunningSubmitter[] = [];
  const nonceOf = (tag: "latest" | "pending"): Promise<number> => s.chain.provider.getTransactionCount(s.signer, tag);

  beforeAll(async () => {
    s = await startSubmitterStack();
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await client?.close();
    client = undefined;
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("stored nonce = pending + 1: the job sent behind the gap is mined once a self-transfer fills the gap", async () => {
    const prefix = uniquePrefix();
    const q = await txQueueClient(s.redisUrl, prefix);
    client = q;
    const { config } = submitterConfig(s, prefix, { confirmationTimeoutMs: 1500 });
    const logs = captureLogs();
    running.push(await startSubmitter({ config, logger: logs.logger, chainId: CHAIN_ID, options: GAP }));
    // After the start's reconcile (which resets a gap nobody holds): as if a sent transaction had been dropped.
    const gap = await nonceOf("pending");
    await q.redis.set(nonceKey(prefix, CHAIN_ID, s.signer), String(gap + 1));

    const job = await q.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "5",
      recipientAddress: s.routerRecipient,
    });
    const result = await job.waitUntilFinished(q.events, 30_000);

    expect((await s.chain.provider.getTransaction(result.transactionHash))?.nonce).toBe(gap + 1);
    const filler = logs
      .lines()
      .find((l) => l.message === "nonce gap: sent a zero-value self-transfer at the missing nonce");
    expect(filler).toMatchObject({ nonce: gap });
    const fillerTx = await s.chain.provider.getTransaction(String(filler?.transactionHash));
    expect(fillerTx).toMatchObject({ nonce: gap, to: s.signer, value: 0n });
    await expect(s.chain.provider.getTransactionReceipt(String(filler?.transactionHash))).resolves.toMatchObject({
      status: 1,
    });
    await expect(nonceOf("latest")).resolves.toBe(gap + 2);
  });

  it("with a ledger: the filler that was mined is named (nonce-fill) and its record finished, next to the job's own", async () => {
    const prefix = uniquePrefix();
    const q = await txQueueClient(s.redisUrl, prefix);
    client = q;
    const loaded = submitterConfig(s, prefix, { confirmationTimeoutMs: 1500 }).config;
    const config = { ...loaded, ledger: ledgerWithDefaults({ databaseUrl: "postgres://ledger.invalid/ledger" }) };
    const logs = captureLogs();
    running.push(await startSubmitter({ config, logger: logs.logger, chainId: CHAIN_ID, options: GAP }));
    const gap = await nonceOf("pending");
    await q.redis.set(nonceKey(prefix, CHAIN_ID, s.signer), String(gap + 1));
    const job = await q.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "5",
      recipientAddress: s.routerRecipient,
    });
    const result = await job.waitUntilFinished(q.events, 30_000);
    const ledger = new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, { connection: q.redis, prefix });
    try {
      const named = await waitFor(
        "the filler named",
        async () => {
          const jobs = (await ledger.getJobs(["waiting"])).map((j) => j.data);
          return jobs.length >= 2 ? jobs : undefined;
        },
        10_000,
      );
      const filler = await q.record(fillerJobId(gap));
      expect(filler).toMatchObject({ status: "confirmed", result: { transactionHash: expect.any(String) } });
      expect(
        named.sort((a, b) => String(a.kind).localeCompare(String(b.kind))).map(({ kind, hash }) => ({ kind, hash })),
      ).toEqual([
        { kind: "nonce-fill", hash: filler?.result?.transactionHash },
        { kind: "remove-liquidity", hash: result.transactionHash },
      ]);
      expect((await s.chain.provider.getTransaction(String(filler?.result?.transactionHash)))?.nonce).toBe(gap);
    } finally {
      await ledger.close();
    }
  });

  it("a failed job's stored transaction of the missing nonce is rebroadcast, not replaced", async () => {
    const prefix = uniquePrefix();
    const q = await txQueueClient(s.redisUrl, prefix);
    client = q;
    const { config } = submitterConfig(s, prefix, { confirmationTimeoutMs: 1500 });
    const gap = await nonceOf("pending");
    // A job that signed and persisted its transaction at `gap`, then stopped tending it; no node has it.
    const stored = await storeUnsentTransaction(s, { redis: q.redis, prefix, jobId: "failed-job", nonce: gap });
    const logs = captureLogs();
    running.push(await startSubmitter({ config, logger: logs.logger, chainId: CHAIN_ID, options: GAP }));
    await q.redis.set(nonceKey(prefix, CHAIN_ID, s.signer), String(gap + 1));

    const job = await q.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "6",
      recipientAddress: s.routerRecipient,
    });
    const result = await job.waitUntilFinished(q.events, 30_000);

    expect((await s.chain.provider.getTransaction(result.transactionHash))?.nonce).toBe(gap + 1);
    await expect(s.chain.provider.getTransactionReceipt(stored)).resolves.toMatchObject({ status: 1 });
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({
        message: "nonce gap: rebroadcast the stored transaction of the missing nonce",
        nonce: gap,
        jobId: "failed-job",
      }),
    );
    await expect(nonceOf("latest")).resolves.toBe(gap + 2);
  });

  it("fencing: a holder whose lease was taken over can write neither a send record nor the nonce store", async () => {
    const prefix = uniquePrefix();
    const q = await txQueueClient(s.redisUrl, prefix);
    client = q;
    const lease = (ownerId: string) =>
      createSenderLease({ redis: q.redis, prefix, chainId: CHAIN_ID, signerAddress: s.signer, ownerId, ttlMs: 300 });
    const old = lease("old");
    const oldFence = await old.tryAcquire();
    expect(oldFence).toBeDefined();
    const records = createTxRecordStore({ redis: q.redis, prefix, chainId: CHAIN_ID, fence: () => oldFence });
    const nonces = createNonceStore({
      redis: q.redis,
      prefix,
      chainId: CHAIN_ID,
      signerAddress: s.signer,
      provider: s.chain.provider,
      fence: () => oldFence,
    });
    const draft = newTxRecord({
      jobId: "fenced",
      jobName: "remove-liquidity",
      chainId: CHAIN_ID,
      from: s.signer,
      dataHash: "h",
      call: { to: s.signer, data: "0x", value: "0", gasLimit: "21000" },
    });
    const saved = await records.save({ ...draft, nonce: 1 });
    expect(saved.owner).toEqual({ id: "old", term: oldFence?.term });

    // The old holder stops renewing (a pause); a new one takes the lease once it lapses.
    const fresh = lease("new");
    const newFence = await waitFor("the lease to lapse and be taken", async () => fresh.tryAcquire());
    expect(newFence.term).toBeGreaterThan(oldFence?.term ?? 0);
    await expect(records.save({ ...saved, bumps: 1 })).rejects.toBeInstanceOf(SenderLeaseLostError);
    await expect(nonces.advanceTo(50)).rejects.toBeInstanceOf(SenderLeaseLostError);
    await expect(q.redis.get(nonceKey(prefix, CHAIN_ID, s.signer))).resolves.toBeNull();
    await expect(records.load("fenced")).resolves.toMatchObject({ version: 1, bumps: 0 });
    await expect(old.renew()).resolves.toBe(false);
  });
});

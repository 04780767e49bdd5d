import { Wallet, ZeroAddress } from "ethers";
import { startSubmitter, type RunningSubmitter, type SubmitterOptions } from "../../services/submitter/start-submitter";
import type { RouterConfig } from "../../shared/config/types";
import { TX_JOB, isTxJobProgress, txJobId, txJobOptions, type TxJobData } from "../../shared/queues";
import { txRecordKey } from "../../shared/coordination/keys";
import { TxRecordConflictError } from "../../services/submitter/send/errors";
import { FINISHED_RECORD_TTL_MS, createTxRecordStore, newTxRecord } from "../../services/submitter/send/tx-record";
import { RECEIVER_EXPIRY_OFFSET_SEC } from "../../shared/protocol/expiry";
import { RETENTION_MARGIN_SEC } from "../../shared/protocol/retention";
import { liveChildPids } from "../harness/child-process";
import {
  CHAIN_ID,
  routerBalance,
  startSubmitterStack,
  submitterConfig,
  tokenBalance,
  txQueueClient,
  type SubmitterStack,
  type TxQueueClient,
} from "./submitter-fixture";
import { waitFor } from "../harness/wait";
import { captureLogs, type LogCapture } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/** The submitter in-process (startSubmitter, as main.ts runs it) against anvil + NXTP + a real redis-server. */

// Shortened polls (default 1 s) to keep dozens of mined-receipt waits fast; the real-SDK swaps run at the defaults.
const FAST: SubmitterOptions = { pollIntervalMs: 50, providerOptions: { headRefreshMs: 500 } };

describe("submitter (in-process)", () => {
  let s: SubmitterStack;
  let client: TxQueueClient;
  const running: RunningSubmitter[] = [];

  const start = async (config: RouterConfig, logs: LogCapture = captureLogs()): Promise<RunningSubmitter> => {
    const submitter = await startSubmitter({ config, logger: logs.logger, chainId: CHAIN_ID, options: FAST });
    running.push(submitter);
    return submitter;
  };
  const setUp = async (params: Parameters<typeof submitterConfig>[2] = {}): Promise<RouterConfig> => {
    const prefix = uniquePrefix();
    client = await txQueueClient(s.redisUrl, prefix);
    return submitterConfig(s, prefix, params).config;
  };
  const nonceOf = (tag: "latest" | "pending"): Promise<number> => s.chain.provider.getTransactionCount(s.signer, tag);

  beforeAll(async () => {
    s = await startSubmitterStack();
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await client?.close();
    await s.chain.anvil.setAutomine(true);
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("1. removes ERC20 and native liquidity in direct mode, reports the broadcast, completes at its block", async () => {
    const config = await setUp();
    const logs = captureLogs();
    await start(config, logs);
    const token = s.chain.deployment.token;
    const recipient = Wallet.createRandom().address;
    const [tmBefore, nativeBefore] = await Promise.all([
      routerBalance(s, s.signer, token),
      routerBalance(s, s.signer, ZeroAddress),
    ]);

    const job = await client.addRemoveLiquidity({ assetId: token, amount: "1234", recipientAddress: recipient });
    const result = await job.waitUntilFinished(client.events, 30_000);
    expect(result).toEqual({
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      blockNumber: expect.any(Number),
    });
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(tmBefore - 1234n);
    await expect(tokenBalance(s, recipient)).resolves.toBe(1234n);
    const receipt = await s.chain.provider.getTransactionReceipt(result.transactionHash);
    expect(receipt).toMatchObject({ status: 1, blockNumber: result.blockNumber, from: s.signer });
    const progress = client.progress.get(job.id ?? "") ?? [];
    expect(progress).toContainEqual({
      stage: "broadcast",
      transactionHash: result.transactionHash,
      nonce: expect.any(Number),
    });
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({
        at: "submitter.job",
        outcome: "completed",
        jobId: job.id,
        chainId: CHAIN_ID,
        transactionHash: result.transactionHash,
        nonce: expect.any(Number),
        durationMs: expect.any(Number),
      }),
    );
    await expect(client.record(job.id ?? "")).resolves.toMatchObject({ status: "confirmed", result });

    const nativeJob = await client.addRemoveLiquidity({
      assetId: ZeroAddress,
      amount: "5000000000",
      recipientAddress: recipient,
    });
    const nativeResult = await nativeJob.waitUntilFinished(client.events, 30_000);
    await expect(routerBalance(s, s.signer, ZeroAddress)).resolves.toBe(nativeBefore - 5_000_000_000n);
    await expect(s.chain.provider.getBalance(recipient)).resolves.toBe(5_000_000_000n);
    expect(nativeResult.transactionHash).not.toBe(result.transactionHash);
  });

  it("completes a re-run of a confirmed job with its stored result and sends nothing", async () => {
    const config = await setUp();
    const logs = captureLogs();
    await start(config, logs);
    const job = await client.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "7",
      recipientAddress: s.routerRecipient,
    });
    const first = await job.waitUntilFinished(client.events, 30_000);
    const nonceBefore = await nonceOf("pending");

    await job.retry("completed");
    await waitFor("the re-run to finish", async () =>
      ((await client.queue.getJob(job.id ?? ""))?.attemptsStarted ?? 0) >= 2 && (await job.isCompleted())
        ? true
        : undefined,
    );
    const rerun = await client.queue.getJob(job.id ?? "");
    expect(rerun?.returnvalue).toEqual(first);
    await expect(nonceOf("pending")).resolves.toBe(nonceBefore);
    expect(
      logs.lines().filter((l) => l.message === "job already confirmed: returning its stored result, sending nothing"),
    ).toHaveLength(1);
    expect(logs.lines().filter((l) => l.message === "transaction broadcast")).toHaveLength(1);
  });

  it("2. removes liquidity through the Router contract: funds reach the Router's recipient", async () => {
    const config = await setUp({ routerContract: true });
    await start(config);
    const routerContract = s.chain.deployment.routerContract ?? "";
    const token = s.chain.deployment.token;
    const ignored = Wallet.createRandom().address;
    const [contractBefore, recipientBefore] = await Promise.all([
      routerBalance(s, routerContract, token),
      tokenBalance(s, s.routerRecipient),
    ]);
    const signerLiquidityBefore = await routerBalance(s, s.signer, token);

    const job = await client.addRemoveLiquidity({ assetId: token, amount: "999", recipientAddress: ignored });
    const result = await job.waitUntilFinished(client.events, 30_000);
    await expect(routerBalance(s, routerContract, token)).resolves.toBe(contractBefore - 999n);
    await expect(tokenBalance(s, s.routerRecipient)).resolves.toBe(recipientBefore + 999n);
    await expect(tokenBalance(s, ignored)).resolves.toBe(0n);
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(signerLiquidityBefore);
    const tx = await s.chain.provider.getTransaction(result.transactionHash);
    expect(tx).toMatchObject({ from: s.signer, to: routerContract });
  });

  it("3. fails a reverting removal at once with INSUFFICIENT_LIQUIDITY and sends nothing", async () => {
    const config = await setUp();
    await start(config);
    const nonceBefore = await nonceOf("pending");
    const tooMuch = (await routerBalance(s, s.signer, s.chain.deployment.token)) + 1n;

    const job = await client.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: tooMuch.toString(),
      recipientAddress: s.routerRecipient,
    });
    await expect(job.waitUntilFinished(client.events, 30_000)).rejects.toThrow(/^INSUFFICIENT_LIQUIDITY/);
    const failed = await client.queue.getJob(job.id ?? "");
    expect(failed?.attemptsMade).toBe(1);
    expect(failed?.failedReason).toMatch(/^INSUFFICIENT_LIQUIDITY: /);
    await expect(nonceOf("pending")).resolves.toBe(nonceBefore);
    await expect(client.record(job.id ?? "")).resolves.toBeUndefined();
  });

  it("4. two workers on one chain: 50 jobs, 50 consecutive nonces, no nonce errors, exact balance", async () => {
    const config = await setUp();
    const logsA = captureLogs();
    const logsB = captureLogs();
    await Promise.all([start(config, logsA), start(config, logsB)]);
    const token = s.chain.deployment.token;
    const recipient = Wallet.createRandom().address;
    const liquidityBefore = await routerBalance(s, s.signer, token);
    const nonceBefore = await nonceOf("latest");

    const jobs = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        client.addRemoveLiquidity({ assetId: token, amount: String(100 + i), recipientAddress: recipient }),
      ),
    );
    const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(client.events, 120_000)));

    const nonces = await Promise.all(
      results.map(async (r) => (await s.chain.provider.getTransaction(r.transactionHash))?.nonce),
    );
    expect([...nonces].sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(
      Array.from({ length: 50 }, (_, i) => nonceBefore + i),
    );
    await expect(nonceOf("latest")).resolves.toBe(nonceBefore + 50);
    const total = Array.from({ length: 50 }, (_, i) => BigInt(100 + i)).reduce((a, b) => a + b, 0n);
    await expect(tokenBalance(s, recipient)).resolves.toBe(total);
    await expect(routerBalance(s, s.signer, token)).resolves.toBe(liquidityBefore - total);
    const lines = [...logsA.lines(), ...logsB.lines()];
    expect(lines.filter((l) => JSON.stringify(l).match(/NONCE_TOO_LOW|nonce already used/))).toEqual([]);
    const outcomes = lines.filter((l) => l.at === "submitter.job");
    expect(outcomes.filter((l) => l.outcome === "completed")).toHaveLength(50);
  });

  it("6. bumps a stuck transaction at the same nonce; exactly one attempt is mined", async () => {
    const config = await setUp({ confirmationTimeoutMs: 1500 });
    await start(config);
    await s.chain.anvil.setAutomine(false);
    const nonceBefore = await nonceOf("latest");

    const job = await client.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "31",
      recipientAddress: s.routerRecipient,
    });
    const id = job.id ?? "";
    // Two broadcast reports: the original and its bump (the record alone shows a bump before it is sent).
    await waitFor("the bump's broadcast", async () =>
      (client.progress.get(id) ?? []).filter(isTxJobProgress).length >= 2 ? true : undefined,
    );
    const record = await client.record(id);
    if (!record) throw new Error("no record after two broadcasts");
    const [first, second] = record.attempts;
    expect(second.nonce).toBe(first.nonce);
    expect(BigInt(feeCapOf(second.fee))).toBeGreaterThan(BigInt(feeCapOf(first.fee)));
    expect(record.bumps).toBeGreaterThanOrEqual(1);

    await s.chain.anvil.mine(1);
    const result = await job.waitUntilFinished(client.events, 30_000);
    const final = await client.record(id);
    const hashes = final?.attempts.map((a) => a.hash) ?? [];
    expect(hashes).toContain(result.transactionHash);
    const receipts = await Promise.all(hashes.map((h) => s.chain.provider.getTransactionReceipt(h)));
    expect(receipts.filter((r) => r !== null)).toHaveLength(1);
    await expect(nonceOf("latest")).resolves.toBe(nonceBefore + 1);
    const progressHashes = (client.progress.get(id) ?? []).filter(isTxJobProgress).map((p) => p.transactionHash);
    expect(progressHashes.slice(0, 2)).toEqual([first.hash, second.hash]);
  });

  it("hands an in-flight job to the standby on a graceful stop; the standby finishes the same transaction", async () => {
    const config = await setUp();
    const logsA = captureLogs();
    const a = await start(config, logsA);
    await s.chain.anvil.setAutomine(false);
    const job = await client.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "13",
      recipientAddress: s.routerRecipient,
    });
    const id = job.id ?? "";
    const sent = await waitFor("the broadcast", async () => client.progress.get(id)?.find(isTxJobProgress));
    const logsB = captureLogs();
    await start(config, logsB);

    await a.stop();
    expect(logsA.lines()).toContainEqual(
      expect.objectContaining({ at: "submitter.job", outcome: "handover", jobId: id }),
    );
    await waitFor("the standby to resume", async () =>
      logsB.lines().some((l) => l.message === "resuming the job's persisted transaction") ? true : undefined,
    );
    await s.chain.anvil.mine(1);
    const result = await job.waitUntilFinished(client.events, 30_000);
    expect(result.transactionHash).toBe(sent.transactionHash);
    // One finished attempt: the handover did not use one.
    expect((await client.queue.getJob(id))?.attemptsMade).toBe(1);
  });

  // A remove-liquidity now rebuilds only once two providers confirm the nonce taken, so this
  // test lists the node twice (two providers); with one provider it would wait instead (test/integration/nonce-taken.test.ts).
  it("sends a new transaction when an operator's manual transaction took the job's nonce", async () => {
    const config = await setUp({ providers: [s.chain.anvil.url, s.chain.anvil.url] });
    const logs = captureLogs();
    await start(config, logs);
    await s.chain.anvil.setAutomine(false);
    const recipient = Wallet.createRandom().address;
    const job = await client.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "21",
      recipientAddress: recipient,
    });
    const id = job.id ?? "";
    const sent = await waitFor("the broadcast", async () => client.progress.get(id)?.find(isTxJobProgress));

    // Same key, same nonce, higher fee: the node replaces the job's transaction with the operator's.
    const operator = Wallet.fromPhrase(s.mnemonic, s.chain.provider);
    const manual = await operator.sendTransaction({
      to: operator.address,
      value: 0n,
      nonce: sent.nonce,
      gasLimit: 21_000n,
      maxFeePerGas: 50_000_000_000n,
      maxPriorityFeePerGas: 20_000_000_000n,
    });
    await s.chain.anvil.mine(1);
    await s.chain.anvil.setAutomine(true);

    const result = await job.waitUntilFinished(client.events, 30_000);
    expect(result.transactionHash).not.toBe(sent.transactionHash);
    await expect(s.chain.provider.getTransactionReceipt(manual.hash)).resolves.toMatchObject({ status: 1 });
    await expect(s.chain.provider.getTransactionReceipt(sent.transactionHash)).resolves.toBeNull();
    expect((await s.chain.provider.getTransaction(result.transactionHash))?.nonce).toBe(sent.nonce + 1);
    await expect(tokenBalance(s, recipient)).resolves.toBe(21n);
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({
        level: "error",
        message: "nonce used by a transaction this job did not send (a manual transaction?): sending a new one",
      }),
    );
  });

  it("refuses a stale record write (two processors on one job): compare-and-set on the version", async () => {
    const prefix = uniquePrefix();
    client = await txQueueClient(s.redisUrl, prefix);
    const store = createTxRecordStore({ redis: client.redis, prefix, chainId: CHAIN_ID });
    const draft = newTxRecord({
      jobId: "job-cas",
      jobName: "remove-liquidity",
      chainId: CHAIN_ID,
      from: s.signer,
      dataHash: "h",
      call: { to: s.signer, data: "0x", value: "0", gasLimit: "21000" },
    });
    const saved = await store.save({ ...draft, nonce: 3 });
    expect(saved.version).toBe(1);
    await store.save({ ...saved, bumps: 1 });
    await expect(store.save({ ...saved, bumps: 2 })).rejects.toBeInstanceOf(TxRecordConflictError);
    await expect(store.save({ ...draft, nonce: 4 })).rejects.toBeInstanceOf(TxRecordConflictError);
    await expect(store.load("job-cas")).resolves.toMatchObject({ version: 2, bumps: 1, nonce: 3 });
  });

  it("keeps a finished record until its transfer ended plus a day, one of no transfer a month, a withdrawal's and an unfinished one for ever", async () => {
    const prefix = uniquePrefix();
    client = await txQueueClient(s.redisUrl, prefix);
    const store = createTxRecordStore({ redis: client.redis, prefix, chainId: CHAIN_ID });
    const nowSec = Math.floor(Date.now() / 1000);
    const expiry = nowSec + 3 * 86_400 + 3600; // the SDK's usual sending expiry
    const draft = (jobId: string, transferExpirySec?: number, jobName?: string) =>
      newTxRecord({
        jobId,
        jobName: jobName ?? (transferExpirySec === undefined ? "remove-liquidity" : "fulfill-sender"),
        chainId: CHAIN_ID,
        from: s.signer,
        dataHash: "h",
        call: { to: s.signer, data: "0x", value: "0", gasLimit: "21000" },
        transferExpirySec,
      });
    const ttlOf = (jobId: string) => client.redis.pttl(txRecordKey(prefix, CHAIN_ID, jobId));
    const claim = await store.save({ ...draft("job-claim", expiry), nonce: 1 });
    expect(await ttlOf("job-claim")).toBe(-1);
    await store.save({ ...claim, status: "confirmed" });
    const wantedMs = (expiry + RECEIVER_EXPIRY_OFFSET_SEC + RETENTION_MARGIN_SEC - nowSec) * 1000;
    expect(await ttlOf("job-claim")).toBeGreaterThan(wantedMs - 60_000);
    expect(await ttlOf("job-claim")).toBeLessThanOrEqual(wantedMs);
    // A withdrawal's record is never dropped: the contract pays a second removeLiquidity.
    const removal = await store.save({ ...draft("job-removal"), nonce: 2 });
    await store.save({ ...removal, status: "confirmed" });
    expect(await ttlOf("job-removal")).toBe(-1);
    const filler = await store.save({ ...draft("nonce-gap-fill-4", undefined, "nonce-gap-fill"), nonce: 4 });
    await store.save({ ...filler, status: "confirmed" });
    expect(await ttlOf("nonce-gap-fill-4")).toBeGreaterThan(FINISHED_RECORD_TTL_MS - 60_000);
    // A reverted record moved aside keeps the TTL it was saved with.
    const reverted = await store.save({ ...draft("job-reverted", expiry), nonce: 3 });
    await store.save({ ...reverted, status: "reverted" });
    const archiveId = await store.archiveReverted("job-reverted");
    expect(archiveId).toBe("job-reverted-reverted-2");
    expect(await ttlOf("job-reverted")).toBe(-2);
    expect(await ttlOf(archiveId ?? "")).toBeGreaterThan(wantedMs - 60_000);
    expect(await ttlOf(archiveId ?? "")).toBeLessThanOrEqual(wantedMs);
  });

  it("closes a nonce gap at start unless an unfinished job holds a nonce inside it", async () => {
    const config = await setUp();
    const pending = await nonceOf("pending");
    const key = `${config.redisPrefix}:router:nonce:${CHAIN_ID}:${s.signer}`;
    const redis = client.redis;

    // A job waiting with a record at nonce `pending` (as if its first broadcast never reached a node).
    const holder = await client.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "1",
      recipientAddress: s.routerRecipient,
    });
    await client.queue.pause();
    await redis.set(key, String(pending + 3));
    await redis.hset(
      `${config.redisPrefix}:router:tx:${CHAIN_ID}:${holder.id}`,
      "version",
      "1",
      "record",
      JSON.stringify({ jobId: holder.id, status: "sending", nonce: pending, attempts: [] }),
    );
    const kept = captureLogs();
    await (await start(config, kept)).stop();
    await expect(redis.get(key)).resolves.toBe(String(pending + 3));
    expect(kept.lines()).toContainEqual(
      expect.objectContaining({ at: "submitter.nonce", jobId: holder.id, nonce: pending }),
    );

    await holder.remove();
    const reset = captureLogs();
    await (await start(config, reset)).stop();
    await expect(redis.get(key)).resolves.toBe(String(pending));
    expect(reset.lines()).toContainEqual(
      expect.objectContaining({ level: "warn", at: "submitter.nonce", stored: pending + 3, pending }),
    );
  });

  it("runs claims (fulfill-sender) before an admin job enqueued earlier: producers' priorities", async () => {
    const config = await setUp();
    const admin = await client.queue.add(
      TX_JOB.removeLiquidity,
      {
        chainId: CHAIN_ID,
        assetId: s.chain.deployment.token,
        amount: "3",
        recipientAddress: s.routerRecipient,
        requestId: "prio-admin",
      },
      txJobOptions(TX_JOB.removeLiquidity, txJobId(TX_JOB.removeLiquidity, "prio-admin")),
    );
    // Invalid data on purpose: the claim fails at once (INVALID_JOB), which is enough to see when it ran.
    const claim = await client.queue.add(
      TX_JOB.fulfillSender,
      { chainId: CHAIN_ID } as unknown as TxJobData,
      txJobOptions(TX_JOB.fulfillSender, txJobId(TX_JOB.fulfillSender, "prio-claim")),
    );
    const submitter = await startSubmitter({
      config,
      logger: captureLogs().logger,
      chainId: CHAIN_ID,
      options: { ...FAST, concurrency: 1 },
    });
    running.push(submitter);
    await admin.waitUntilFinished(client.events, 30_000);
    const [adminRun, claimRun] = await Promise.all([
      client.queue.getJob(admin.id ?? ""),
      client.queue.getJob(claim.id ?? ""),
    ]);
    expect(claimRun?.failedReason).toMatch(/^INVALID_JOB/);
    expect(claimRun?.processedOn).toBeLessThanOrEqual(adminRun?.processedOn ?? 0);
    expect(claimRun?.finishedOn).toBeLessThanOrEqual(adminRun?.processedOn ?? 0);
  });
});

function feeCapOf(fee: { type: 0; gasPrice: string } | { type: 2; maxFeePerGas: string }): string {
  return fee.type === 0 ? fee.gasPrice : fee.maxFeePerGas;
}

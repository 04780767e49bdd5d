import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Wallet, parseEther } from "ethers";
import { hashJobData } from "../../services/submitter/job/send-job-of";
import type { TxRecord } from "../../services/submitter/send/tx-record";
import { createLedgerProducer, openLedgerQueue, type LedgerProducer } from "../../shared/process/ledger-producer";
import {
  LEDGER_QUEUE_NAME,
  TX_JOB,
  bookTransactionJobId,
  txJobId,
  type BookTransactionJobData,
  type FulfillSenderJobData,
} from "../../shared/queues";
import { approvalRecordId, txRecordKey } from "../../shared/coordination/keys";
import { liveChildPids } from "../harness/child-process";
import { mintToken } from "../harness/deploy";
import type { StackChain } from "../harness/stack";
import {
  RECEIVING,
  SENDING,
  keyOf,
  makeTransfer,
  receiverTxData,
  startLifecycleStack,
  startRun,
  userFulfill,
  type LifecycleRun,
  type LifecycleStack,
} from "./lifecycle-fixture";

/**
 * The submitter names every transaction its signer gets mined to the ledger queue (`book-transaction`, one job per
 * chain and hash), on two anvil chains with the real NXTP contracts and a real redis-server; no ledger process runs,
 * so the named jobs stay in the queue for the test to read.
 */
describe("submitters name mined transactions to the ledger queue", () => {
  let s: LifecycleStack;
  let run: LifecycleRun | undefined;
  let ledgerQueue: Queue<BookTransactionJobData> | undefined;

  const ledgerJobs = async (): Promise<BookTransactionJobData[]> => {
    const jobs =
      (await ledgerQueue?.getJobs(["waiting", "prioritized", "delayed", "active", "completed", "failed"])) ?? [];
    for (const job of jobs) {
      expect(job.name).toBe("book-transaction");
      expect(job.id).toBe(bookTransactionJobId(job.data.chainId, job.data.hash));
    }
    return jobs.map((j) => j.data).sort((a, b) => (a.hash < b.hash ? -1 : 1));
  };
  const openLedger = (r: LifecycleRun): Queue<BookTransactionJobData> => {
    ledgerQueue = new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, { connection: r.redis, prefix: r.prefix });
    return ledgerQueue;
  };
  /** Every transaction the signer got mined on `chain` since `fromNonce`, by nonce, from the chain's blocks. */
  const minedBySigner = async (chain: StackChain, fromBlock: number): Promise<Map<string, number>> => {
    const hashes = new Map<string, number>();
    const head = await chain.provider.getBlockNumber();
    for (let n = fromBlock; n <= head; n += 1) {
      const block = await chain.provider.getBlock(n, true);
      for (const tx of block?.prefetchedTransactions ?? []) {
        if (tx.from.toLowerCase() === s.signerAddress.toLowerCase()) {
          const receipt = await chain.provider.getTransactionReceipt(tx.hash);
          hashes.set(tx.hash.toLowerCase(), receipt?.status ?? -1);
        }
      }
    }
    return hashes;
  };

  beforeAll(async () => {
    s = await startLifecycleStack();
    // The signer's own tokens for add-liquidity-for (an ERC-20: its approval is a transaction of its own).
    await mintToken(s.receiving.deployment, s.signerAddress, parseEther("100"));
  });

  afterEach(async () => {
    await ledgerQueue?.close();
    ledgerQueue = undefined;
    await run?.stop();
    run = undefined;
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("prepare, fulfill, remove-liquidity, approve and add-liquidity: one job each, the chain's hashes, nothing for no-ops", async () => {
    const startBlocks = {
      sending: (await s.sending.provider.getBlockNumber()) + 1,
      receiving: (await s.receiving.provider.getBlockNumber()) + 1,
    };
    const r = (run = await startRun(s, "direct", { ledger: true }));
    openLedger(r);
    const t = await makeTransfer(s, { mode: "direct" });
    const prepared = await r.finish(
      await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t)),
    );
    const fulfilled = await userFulfill(s, await receiverTxData(s, prepared));
    const fulfillData = {
      chainId: SENDING,
      txData: t.txData,
      signature: fulfilled.signature,
      relayerFee: "0",
      callData: "0x",
      receiverFulfillTransactionHash: fulfilled.transactionHash,
    };
    const claimed = await r.finish(await r.add(SENDING, TX_JOB.fulfillSender, fulfillData, keyOf(t)));
    const removeId = randomUUID();
    const removed = await r.finish(
      await r.add(
        RECEIVING,
        TX_JOB.removeLiquidity,
        {
          chainId: RECEIVING,
          assetId: s.receiving.deployment.token,
          amount: "1000",
          recipientAddress: Wallet.createRandom().address,
          requestId: removeId,
        },
        removeId,
      ),
    );
    const addId = randomUUID();
    const addJobId = txJobId(TX_JOB.addLiquidityFor, addId);
    const added = await r.finish(
      await r.add(
        RECEIVING,
        TX_JOB.addLiquidityFor,
        {
          chainId: RECEIVING,
          assetId: s.receiving.deployment.token,
          amount: "5000",
          router: s.signerAddress,
          requestId: addId,
        },
        addId,
      ),
    );
    const approval = await r.redis.hget(txRecordKey(r.prefix, RECEIVING, approvalRecordId(addJobId)), "record");
    const approvalHash = (JSON.parse(approval ?? "{}") as { result?: { transactionHash: string } }).result
      ?.transactionHash;
    expect(approvalHash).toMatch(/^0x[0-9a-f]{64}$/);
    // The same work again under new ids: found on chain, nothing sent, nothing named.
    await expect(
      r.finish(await r.add(SENDING, TX_JOB.fulfillSender, fulfillData, `${keyOf(t)}-again`)),
    ).resolves.toMatchObject({ noop: true });

    const expected: BookTransactionJobData[] = [
      {
        chainId: RECEIVING,
        hash: prepared.transactionHash,
        source: "submitter",
        kind: "prepare",
        transactionId: t.txData.transactionId,
      },
      {
        chainId: SENDING,
        hash: claimed.transactionHash,
        source: "submitter",
        kind: "fulfill",
        transactionId: t.txData.transactionId,
      },
      {
        chainId: RECEIVING,
        hash: removed.transactionHash,
        source: "submitter",
        kind: "remove-liquidity",
        requestId: removeId,
      },
      { chainId: RECEIVING, hash: String(approvalHash), source: "submitter", kind: "approve", requestId: addId },
      { chainId: RECEIVING, hash: added.transactionHash, source: "submitter", kind: "add-liquidity", requestId: addId },
    ];
    expect(await ledgerJobs()).toEqual(expected.sort((a, b) => (a.hash < b.hash ? -1 : 1)));
    // Exactly the transactions the signer got mined, read from the chains' blocks: none missing, none extra.
    const mined = [
      ...[...(await minedBySigner(s.sending, startBlocks.sending)).keys()].map((hash) => `${SENDING}:${hash}`),
      ...[...(await minedBySigner(s.receiving, startBlocks.receiving)).keys()].map((hash) => `${RECEIVING}:${hash}`),
    ].sort();
    expect((await ledgerJobs()).map((j) => `${j.chainId}:${j.hash}`).sort()).toEqual(mined);
  });

  it("a job stopped after its transaction was mined and confirmed, before the naming, names it on its retry", async () => {
    let interrupted = 0;
    const r = (run = await startRun(s, "direct", {
      ledger: true,
      submitterOptions: {
        hooks: {
          at: (point) => {
            if (point === "after-confirmed-saved" && interrupted === 0) {
              interrupted += 1;
              throw new Error("killed between the confirmed record and the naming");
            }
          },
        },
      },
    }));
    openLedger(r);
    const t = await makeTransfer(s, { mode: "direct" });
    const job = await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t));
    const prepared = await r.finish(job);
    expect(interrupted).toBe(1);
    expect((await r.queues.get(RECEIVING)?.getJob(String(job.id)))?.attemptsStarted).toBeGreaterThanOrEqual(2);
    expect(await ledgerJobs()).toEqual([
      {
        chainId: RECEIVING,
        hash: prepared.transactionHash,
        source: "submitter",
        kind: "prepare",
        transactionId: t.txData.transactionId,
      },
    ]);
  });

  it("a naming Redis refuses parks the job (no attempt used, nothing sent again) and names it on the next run", async () => {
    let refusals = 0;
    const holder: { real?: LedgerProducer } = {};
    const refusingOnce: LedgerProducer = {
      name: async (entries) => {
        if (refusals === 0) {
          refusals += 1;
          return false;
        }
        return (holder.real as LedgerProducer).name(entries);
      },
    };
    const r = (run = await startRun(s, "direct", { ledger: true, submitterOptions: { ledger: refusingOnce } }));
    const producerQueue = openLedgerQueue(r.redis, r.prefix, r.logs.logger);
    holder.real = createLedgerProducer({
      queue: producerQueue,
      logger: r.logs.logger,
      chainId: RECEIVING,
    });
    openLedger(r);
    const nonceBefore = await s.receiving.provider.getTransactionCount(s.signerAddress, "pending");
    const t = await makeTransfer(s, { mode: "direct" });
    const job = await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t));
    const prepared = await r.finish(job);
    expect(refusals).toBe(1);
    expect(await s.receiving.provider.getTransactionCount(s.signerAddress, "pending")).toBe(nonceBefore + 1);
    const finished = await r.queues.get(RECEIVING)?.getJob(String(job.id));
    // Two runs, one attempt: the completing one (a park does not count one).
    expect([finished?.attemptsStarted, finished?.attemptsMade]).toEqual([2, 1]);
    expect(r.logs.lines()).toContainEqual(
      expect.objectContaining({ at: "submitter.job", code: "LEDGER_NAMING_FAILED" }),
    );
    expect((await ledgerJobs()).map((j) => j.hash)).toEqual([prepared.transactionHash]);
    await producerQueue.close();
  });

  it("a claim mined and reverted is named (it cost gas), before its record is moved aside; so is the claim sent again", async () => {
    // A real reverted transaction of the signer (no function of the TransactionManager has this selector), as a
    // claim's first transaction that lost a race; sent before the submitters start, which then read its nonce as used.
    const signer = Wallet.fromPhrase(s.mnemonic, s.sending.provider);
    const sent = await signer.sendTransaction({
      to: s.sending.deployment.transactionManager,
      data: "0xdeadbeef",
      gasLimit: 100_000n,
    });
    const revertedReceipt = await s.sending.provider.waitForTransaction(sent.hash);
    expect(revertedReceipt?.status).toBe(0);
    const r = (run = await startRun(s, "direct", { ledger: true }));
    openLedger(r);
    const t = await makeTransfer(s, { mode: "direct" });
    const prepared = await r.finish(
      await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t)),
    );
    const fulfilled = await userFulfill(s, await receiverTxData(s, prepared));
    const data: FulfillSenderJobData = {
      chainId: SENDING,
      txData: t.txData,
      signature: fulfilled.signature,
      relayerFee: "0",
      callData: "0x",
      receiverFulfillTransactionHash: fulfilled.transactionHash,
    };
    // The process saved the record reverted, then died before naming it.
    const jobId = txJobId(TX_JOB.fulfillSender, keyOf(t));
    const reverted: TxRecord = {
      version: 3,
      jobId,
      jobName: TX_JOB.fulfillSender,
      chainId: SENDING,
      from: s.signerAddress,
      dataHash: hashJobData(TX_JOB.fulfillSender, data),
      call: { to: s.sending.deployment.transactionManager, data: "0xdeadbeef", value: "0", gasLimit: "100000" },
      nonce: sent.nonce,
      attempts: [],
      bumps: 0,
      status: "reverted",
      revertedHash: sent.hash,
      createdAtMs: Date.now(),
      updatedAtMs: Date.now(),
    };
    await r.redis.hset(txRecordKey(r.prefix, SENDING, jobId), "version", "3", "record", JSON.stringify(reverted));
    const claimed = await r.finish(await r.add(SENDING, TX_JOB.fulfillSender, data, keyOf(t)), 30_000);

    const fulfills = (await ledgerJobs()).filter((j) => j.kind === "fulfill").map((j) => j.hash);
    expect(fulfills.sort()).toEqual([sent.hash, claimed.transactionHash].sort());
    expect(r.logs.lines().find((l) => l.at === "submitter.claim" && l.jobId === jobId)).toMatchObject({
      code: "TRANSACTION_REVERTED",
      archivedRecord: `${jobId}-reverted-3`,
    });
  }, 60_000);

  it("without a ledger section nothing is named: the ledger queue has no key in Redis", async () => {
    const r = (run = await startRun(s, "direct"));
    const t = await makeTransfer(s, { mode: "direct" });
    await r.finish(await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t)));
    expect(await r.redis.keys(`${r.prefix}:${LEDGER_QUEUE_NAME}:*`)).toEqual([]);
    expect((await r.redis.keys(`${r.prefix}:*`)).length).toBeGreaterThan(0);
  });
});

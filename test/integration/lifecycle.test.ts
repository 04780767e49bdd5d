import { Wallet, ZeroHash, parseEther } from "ethers";
import { contractInterface } from "../../shared/chain/contracts";
import { completedVariantDigest, invariantOf } from "../../shared/protocol/digests";
import { abiCancelArgs, abiFulfillArgs, abiPrepareArgs, signRouterCall } from "../../shared/protocol/router-signatures";
import type { TransactionData } from "../../shared/protocol/types";
import { TX_JOB, txJobId, type CancelSenderJobData } from "../../shared/queues";
import { txRecordKey } from "../../shared/coordination/keys";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { liveChildPids } from "../harness/child-process";
import { anvilWallet } from "../harness/anvil";
import {
  DAY,
  EXPIRY_OFFSET_SEC,
  RECEIVING,
  SENDING,
  increaseTime,
  keyOf,
  makeTransfer,
  pendingNonce,
  receiverTxData,
  routerBalance,
  routerOf,
  startLifecycleStack,
  startRun,
  tokenBalance,
  userFulfill,
  variantOf,
  type LifecycleRun,
  type LifecycleStack,
  type RouterMode,
  type Transfer,
} from "./lifecycle-fixture";
import { waitFor } from "../harness/wait";

/**
 * The transfer lifecycle through the submitter's jobs, on two anvil chains with the real NXTP contracts:
 * the user's side is done by hand (prepare on the sending chain, fulfill on the receiving chain), the
 * router's side only through prepare-receiver / fulfill-sender / cancel-sender / cancel-receiver jobs.
 */
describe("transfer lifecycle jobs (two chains, in-process submitters)", () => {
  let s: LifecycleStack;
  let run: LifecycleRun | undefined;

  const start = async (mode: RouterMode): Promise<LifecycleRun> => {
    run = await startRun(s, mode);
    return run;
  };
  const prepareReceiverJob = (r: LifecycleRun, t: Transfer, suffix = "") =>
    r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t) + suffix);
  const cancelSenderJob = (r: LifecycleRun, t: Transfer, suffix = "") =>
    r.add(
      SENDING,
      TX_JOB.cancelSender,
      { chainId: SENDING, txData: t.txData, reason: "test", force: false },
      keyOf(t) + suffix,
    );
  const failedReason = async (r: LifecycleRun, chainId: number, jobId: string): Promise<string | undefined> =>
    (await r.queues.get(chainId)?.getJob(jobId))?.failedReason;

  beforeAll(async () => {
    s = await startLifecycleStack();
  });

  afterEach(async () => {
    await run?.stop();
    run = undefined;
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it.each<RouterMode>(["direct", "router-contract"])(
    "%s mode: prepare-receiver, user fulfill, fulfill-sender; balances add up to the wei; re-runs send nothing",
    async (mode) => {
      const r = await start(mode);
      const router = routerOf(s, mode);
      const amount = parseEther("10");
      const before = {
        userSending: await tokenBalance(s.sending, s.user.address),
        userReceiving: await tokenBalance(s.receiving, s.user.address),
        liquiditySending: await routerBalance(s.sending, router),
        liquidityReceiving: await routerBalance(s.receiving, router),
      };
      const t = await makeTransfer(s, { mode, amount });
      const amountReceived = BigInt(t.bid.amountReceived);
      expect(await tokenBalance(s.sending, s.user.address)).toBe(before.userSending - amount);

      const prepared = await r.finish(await prepareReceiverJob(r, t));
      const receiver = await receiverTxData(s, prepared);
      expect(receiver).toMatchObject({
        amount: amountReceived.toString(),
        expiry: t.txData.expiry - DAY,
        router,
        transactionId: t.txData.transactionId,
      });
      expect(await routerBalance(s.receiving, router)).toBe(before.liquidityReceiving - amountReceived);
      const prepareTx = await s.receiving.provider.getTransaction(prepared.transactionHash);
      expect(prepareTx).toMatchObject({
        from: s.signerAddress,
        to: mode === "direct" ? s.receiving.deployment.transactionManager : s.routerContract,
      });

      const fulfilled = await userFulfill(s, receiver);
      expect(await tokenBalance(s.receiving, s.user.address)).toBe(before.userReceiving + amountReceived);

      const fulfillData = {
        chainId: SENDING,
        txData: t.txData,
        signature: fulfilled.signature,
        relayerFee: "0",
        callData: "0x",
        receiverFulfillTransactionHash: fulfilled.transactionHash,
      };
      const claimed = await r.finish(await r.add(SENDING, TX_JOB.fulfillSender, fulfillData, keyOf(t)));
      expect(claimed.noop).toBeUndefined();
      expect(await routerBalance(s.sending, router)).toBe(before.liquiditySending + amount);
      expect(await variantOf(s.sending, t.txData)).toBe(completedVariantDigest(t.txData.amount, t.txData.expiry));
      // Nothing else moved: the user paid `amount` on one chain and got `amountReceived` on the other.
      expect(await tokenBalance(s.sending, s.user.address)).toBe(before.userSending - amount);
      expect(await tokenBalance(s.receiving, s.user.address)).toBe(before.userReceiving + amountReceived);
      expect(await routerBalance(s.receiving, router)).toBe(before.liquidityReceiving - amountReceived);

      // The same work detected again (a new job id: e.g. the record expired): found on chain, nothing sent.
      const nonces = [await pendingNonce(s, s.sending), await pendingNonce(s, s.receiving)];
      await expect(r.finish(await prepareReceiverJob(r, t, "-again"))).resolves.toMatchObject({
        noop: true,
        transactionHash: ZeroHash,
      });
      await expect(
        r.finish(await r.add(SENDING, TX_JOB.fulfillSender, fulfillData, `${keyOf(t)}-again`)),
      ).resolves.toMatchObject({ noop: true });
      // cancel-sender runs only under its own id (a refund job under another id is refused): the first one's job
      // and record removed, as after their retention, then the same id again.
      const cancelId = txJobId(TX_JOB.cancelSender, keyOf(t));
      await (await r.queues.get(SENDING)?.getJob(cancelId))?.remove();
      await r.redis.del(txRecordKey(r.prefix, SENDING, cancelId));
      await expect(r.finish(await cancelSenderJob(r, t))).resolves.toMatchObject({ noop: true });
      const cancelReceiver = { chainId: RECEIVING, txData: receiver, reason: "test" };
      await expect(
        r.finish(await r.add(RECEIVING, TX_JOB.cancelReceiver, cancelReceiver, `${keyOf(t)}-again`)),
      ).resolves.toMatchObject({ noop: true });
      expect([await pendingNonce(s, s.sending), await pendingNonce(s, s.receiving)]).toEqual(nonces);
      expect(
        r.logs.lines().filter((l) => l.at === "submitter.job" && l.outcome === "completed" && l.noop === true),
      ).toHaveLength(4);
    },
  );

  it("router-contract mode: Router.sol accepts the router-signer signatures from any relayer (and refuses a wrong one)", async () => {
    const mode: RouterMode = "router-contract";
    const r = await start(mode);
    const t = await makeTransfer(s, { mode });
    const receiver = await receiverTxData(s, await r.finish(await prepareReceiverJob(r, t)));
    const fulfilled = await userFulfill(s, receiver);
    const relayer = anvilWallet(7, s.sending.provider);
    const asset = "0x0000000000000000000000000000000000000000";
    const fulfillArgs = {
      txData: t.txData,
      relayerFee: "0",
      signature: fulfilled.signature,
      callData: "0x",
      encodedMeta: "0x",
    };
    const signature = await signRouterCall(s.signer, "fulfill", {
      args: fulfillArgs,
      routerRelayerFeeAsset: asset,
      routerRelayerFee: 0n,
      chainId: SENDING,
    });
    const data = contractInterface("Router").encodeFunctionData("fulfill", [
      abiFulfillArgs(fulfillArgs),
      asset,
      0n,
      signature,
    ]);
    await expect(
      s.sending.provider.estimateGas({ from: relayer.address, to: s.routerContract, data }),
    ).resolves.toBeGreaterThan(0n);
    const wrong = await signRouterCall(createMnemonicSigner(Wallet.createRandom().mnemonic?.phrase ?? ""), "fulfill", {
      args: fulfillArgs,
      routerRelayerFeeAsset: asset,
      routerRelayerFee: 0n,
      chainId: SENDING,
    });
    const bad = contractInterface("Router").encodeFunctionData("fulfill", [
      abiFulfillArgs(fulfillArgs),
      asset,
      0n,
      wrong,
    ]);
    await expect(
      s.sending.provider.estimateGas({ from: relayer.address, to: s.routerContract, data: bad }),
    ).rejects.toThrow(/RC_F:040/);
    // The cancel payload too (chain id = the chain cancelled on): the router may cancel its sending side.
    const cancelArgs = { txData: t.txData, signature: "0x", encodedMeta: "0x" };
    const cancelSig = await signRouterCall(s.signer, "cancel", {
      args: cancelArgs,
      routerRelayerFeeAsset: asset,
      routerRelayerFee: 0n,
      chainId: SENDING,
    });
    const cancel = contractInterface("Router").encodeFunctionData("cancel", [
      abiCancelArgs(cancelArgs),
      asset,
      0n,
      cancelSig,
    ]);
    await expect(
      s.sending.provider.estimateGas({ from: relayer.address, to: s.routerContract, data: cancel }),
    ).resolves.toBeGreaterThan(0n);
    // And prepare (chain id = the receiving chain) for a transfer not prepared there yet.
    const next = await makeTransfer(s, { mode });
    const prepareArgs = {
      invariantData: invariantOf(next.txData),
      amount: next.bid.amountReceived,
      expiry: next.txData.expiry - DAY,
      encryptedCallData: "0x",
      encodedBid: next.sender.encodedBid,
      bidSignature: next.sender.bidSignature,
      encodedMeta: "0x",
    };
    const prepareSig = await signRouterCall(s.signer, "prepare", {
      args: prepareArgs,
      routerRelayerFeeAsset: asset,
      routerRelayerFee: 0n,
      chainId: RECEIVING,
    });
    const prepare = contractInterface("Router").encodeFunctionData("prepare", [
      abiPrepareArgs(prepareArgs),
      asset,
      0n,
      prepareSig,
    ]);
    const receivingRelayer = anvilWallet(7, s.receiving.provider);
    await expect(
      s.receiving.provider.estimateGas({ from: receivingRelayer.address, to: s.routerContract, data: prepare }),
    ).resolves.toBeGreaterThan(0n);
  });

  it("waits for the sending chain's confirmations before preparing the receiving side", async () => {
    run = await startRun(s, "direct", { sendingConfirmations: 3 });
    const r = run;
    const t = await makeTransfer(s, { mode: "direct" });
    const job = await prepareReceiverJob(r, t);
    await waitFor("a retry for confirmations", async () =>
      r.logs.lines().some((l) => l.at === "submitter.job" && l.outcome === "retry" && l.code === "SENDER_NOT_CONFIRMED")
        ? true
        : undefined,
    );
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);
    await s.sending.anvil.mine(2);
    await expect(r.finish(job)).resolves.toMatchObject({ transactionHash: expect.stringMatching(/^0x/) });
  });

  it("refuses a prepare-receiver whose sender data was tampered with: terminal, nothing prepared, no refund enqueued", async () => {
    const r = await start("direct");
    const t = await makeTransfer(s, { mode: "direct" });
    const inflated = { ...t.sender, txData: { ...t.txData, amount: (BigInt(t.txData.amount) * 2n).toString() } };
    const nonce = await pendingNonce(s, s.receiving);
    const job = await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: inflated }, keyOf(t));
    await expect(r.finish(job)).rejects.toThrow(/^SENDER_DATA_MISMATCH: /);
    expect((await r.queues.get(RECEIVING)?.getJob(job.id ?? ""))?.attemptsMade).toBe(1);
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);
    expect(await pendingNonce(s, s.receiving)).toBe(nonce);
    expect(await r.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(t)))).toBeUndefined();
  });

  it("refuses a bid signed by another key (cancellable): the refund is enqueued and sent at once, without the 780 s wait", async () => {
    const r = await start("direct");
    const forger = createMnemonicSigner(Wallet.createRandom().mnemonic?.phrase ?? "");
    const t = await makeTransfer(s, { mode: "direct", bidSigner: forger });
    await expect(r.finish(await prepareReceiverJob(r, t))).rejects.toThrow(/^BID_SIGNER_MISMATCH: /);
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);

    const refundId = txJobId(TX_JOB.cancelSender, keyOf(t));
    const refund = await waitFor(
      "the refund job",
      async () => (await r.queues.get(SENDING)?.getJob(refundId)) ?? undefined,
    );
    expect(refund.data as CancelSenderJobData).toMatchObject({
      chainId: SENDING,
      txData: t.txData,
      reason: "BID_SIGNER_MISMATCH",
      force: false,
      afterOwnRefusal: true,
    });
    // No chain time passes: our own refusal's refund needs no 780 s buffer (no prepare of ours can follow).
    const refunded = await r.finish(refund);
    expect(refunded.noop).toBeUndefined();
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
    expect(await variantOf(s.sending, t.txData)).toBe(completedVariantDigest(t.txData.amount, t.txData.expiry));
  });

  it("refuses a prepare beyond the router's liquidity with NOT_ENOUGH_LIQUIDITY and refunds it within minutes, not at expiry", async () => {
    // The loser of over-committed bids (docs/auction.md, "Promises"): refunded by the router's own cancel at once
    // (the 780 s buffer is waived for our own refusal), not at the sender's expiry days later.
    const r = await start("direct");
    const liquidity = await routerBalance(s.receiving, s.signerAddress);
    const t = await makeTransfer(s, { mode: "direct", amount: liquidity * 2n });
    await expect(r.finish(await prepareReceiverJob(r, t))).rejects.toThrow(/^NOT_ENOUGH_LIQUIDITY: /);
    expect(await routerBalance(s.receiving, s.signerAddress)).toBe(liquidity);
    const refund = await waitFor(
      "the refund job",
      async () => (await r.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(t)))) ?? undefined,
    );
    expect((refund.data as CancelSenderJobData).reason).toBe("NOT_ENOUGH_LIQUIDITY");
    const refundedAtMs = Date.now();
    expect((await r.finish(refund)).noop).toBeUndefined();
    // Never parked by the 780 s rule: the refund went out on its first run, with no chain time added.
    expect(r.logs.lines()).not.toContainEqual(expect.objectContaining({ code: "SENDER_TOO_NEW", jobId: refund.id }));
    console.log(`NOT_ENOUGH_LIQUIDITY refund mined ${Date.now() - refundedAtMs} ms after the refusal's job settled`);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
  });

  it("expiry: cancel-receiver waits for the receiving expiry then returns the liquidity; the sender is refunded after", async () => {
    const r = await start("direct");
    const liquidity = await routerBalance(s.receiving, s.signerAddress);
    const t = await makeTransfer(s, { mode: "direct" });
    const receiver = await receiverTxData(s, await r.finish(await prepareReceiverJob(r, t)));
    const cancelReceiver = await r.add(
      RECEIVING,
      TX_JOB.cancelReceiver,
      { chainId: RECEIVING, txData: receiver, reason: "test" },
      keyOf(t),
    );
    await waitFor("cancel-receiver to be parked", async () =>
      (await cancelReceiver.getState()) === "delayed" ? true : undefined,
    );
    expect(r.logs.lines()).toContainEqual(
      expect.objectContaining({ at: "submitter.job", outcome: "delayed", code: "RECEIVER_NOT_EXPIRED" }),
    );

    await increaseTime(s, EXPIRY_OFFSET_SEC - DAY + 60);
    await cancelReceiver.promote();
    await expect(r.finish(cancelReceiver)).resolves.toMatchObject({ transactionHash: expect.stringMatching(/^0x/) });
    expect(await routerBalance(s.receiving, s.signerAddress)).toBe(liquidity);

    // Before the sender's expiry only the router may cancel it; the receiving side is cancelled, so it does.
    await expect(r.finish(await cancelSenderJob(r, t))).resolves.toMatchObject({
      transactionHash: expect.stringMatching(/^0x/),
    });
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
  });

  it("expiry: after the sender's expiry a never-prepared transfer is refunded to its fallback", async () => {
    const r = await start("router-contract");
    const t = await makeTransfer(s, { mode: "router-contract" });
    await increaseTime(s, EXPIRY_OFFSET_SEC + 60);
    await expect(r.finish(await cancelSenderJob(r, t))).resolves.toMatchObject({
      transactionHash: expect.stringMatching(/^0x/),
    });
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
  });

  it("refuses cancel-sender while a receiving prepare may be in flight, until the contract could no longer take it", async () => {
    const r = await start("direct");
    const t = await makeTransfer(s, { mode: "direct" });
    // A prepare-receiver whose job failed while its transaction was pending: only its record is left.
    const prepareId = txJobId(TX_JOB.prepareReceiver, keyOf(t));
    await r.redis.hset(
      txRecordKey(r.prefix, RECEIVING, prepareId),
      "record",
      JSON.stringify({ status: "sending", jobId: prepareId }),
    );
    await increaseTime(s, 800);
    const job = await cancelSenderJob(r, t);
    await waitFor("a RECEIVER_BEING_PREPARED retry", async () =>
      r.logs.lines().some((l) => l.outcome === "retry" && l.code === "RECEIVER_BEING_PREPARED") ? true : undefined,
    );
    expect(await tokenBalance(s.sending, t.fallback)).toBe(0n);

    // Past senderExpiry − 2 d a receiving prepare reverts (#P:013): the stale record no longer blocks the refund.
    await increaseTime(s, EXPIRY_OFFSET_SEC - 2 * DAY);
    await waitFor("the retry to be scheduled", async () => ((await job.getState()) === "delayed" ? true : undefined));
    await job.promote();
    await expect(r.finish(job)).resolves.toMatchObject({ transactionHash: expect.stringMatching(/^0x/) });
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
  });

  it("refuses cancel-sender with RECEIVER_LIVE while the receiving side is prepared and live", async () => {
    const r = await start("direct");
    const t = await makeTransfer(s, { mode: "direct" });
    await r.finish(await prepareReceiverJob(r, t));
    await increaseTime(s, 800); // past the 780 s rule: the live receiver alone refuses
    const nonce = await pendingNonce(s, s.sending);
    await expect(r.finish(await cancelSenderJob(r, t))).rejects.toThrow(/^RECEIVER_LIVE: /);
    expect(await variantOf(s.sending, t.txData)).not.toBe(completedVariantDigest(t.txData.amount, t.txData.expiry));
    expect(await pendingNonce(s, s.sending)).toBe(nonce);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(0n);
  });

  it("refuses cancel-sender with RECEIVER_FULFILLED once the user was paid, and alerts", async () => {
    const r = await start("direct");
    const t = await makeTransfer(s, { mode: "direct" });
    const receiver: TransactionData = await receiverTxData(s, await r.finish(await prepareReceiverJob(r, t)));
    await userFulfill(s, receiver);
    await increaseTime(s, 800);
    const job = await cancelSenderJob(r, t);
    await expect(r.finish(job)).rejects.toThrow(/^RECEIVER_FULFILLED: /);
    expect(await failedReason(r, SENDING, job.id ?? "")).toMatch(/cancelling the sender would lose the router's claim/);
    expect(r.logs.lines()).toContainEqual(
      expect.objectContaining({ at: "submitter.cancelSender", alert: true, level: "error" }),
    );
    expect(await tokenBalance(s.sending, t.fallback)).toBe(0n);
  });
});

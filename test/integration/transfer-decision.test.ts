import { ZeroHash } from "ethers";
import { completedVariantDigest } from "../../shared/protocol/digests";
import { TX_JOB, txJobId } from "../../shared/queues";
import { transferDecisionKey, txRecordKey } from "../../shared/coordination/keys";
import { claimTransferDecision, readTransferDecision } from "../../shared/coordination/transfer-decision";
import { RECEIVER_EXPIRY_OFFSET_SEC } from "../../shared/protocol/expiry";
import { RETENTION_MARGIN_SEC } from "../../shared/protocol/retention";
import { liveChildPids } from "../harness/child-process";
import {
  RECEIVING,
  SENDING,
  increaseTime,
  keyOf,
  makeTransfer,
  pendingNonce,
  routerBalance,
  startLifecycleStack,
  startRun,
  tokenBalance,
  variantOf,
  type LifecycleRun,
  type LifecycleStack,
  type Transfer,
} from "./lifecycle-fixture";
import { waitFor } from "../harness/wait";

/**
 * A receiving prepare and a sender cancel of one transfer must exclude each other, also
 * while one of them is only in a mempool (automine off) or merely queued. Both submitters run in process on
 * two anvil chains with the real NXTP contracts.
 */
describe("transfer decision: prepare-receiver and cancel-sender exclude each other", () => {
  let s: LifecycleStack;
  let run: LifecycleRun | undefined;

  const prepareReceiverJob = (r: LifecycleRun, t: Transfer) =>
    r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t));
  const cancelSenderJob = (r: LifecycleRun, t: Transfer, force = false) =>
    r.add(SENDING, TX_JOB.cancelSender, { chainId: SENDING, txData: t.txData, reason: "test", force }, keyOf(t));
  const decisionOf = (r: LifecycleRun, t: Transfer) => r.redis.get(transferDecisionKey(r.prefix, keyOf(t)));

  beforeAll(async () => {
    s = await startLifecycleStack();
  });

  afterEach(async () => {
    await s.sending.anvil.setAutomine(true);
    await s.receiving.anvil.setAutomine(true);
    await run?.stop();
    run = undefined;
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("a sender cancel broadcast but not mined stops the receiving prepare (the reproduced 9.995 loss)", async () => {
    const r = (run = await startRun(s, "direct"));
    const t = await makeTransfer(s, { mode: "direct" });
    await increaseTime(s, 800); // past the 780 s rule: the cancel is allowed
    await s.sending.anvil.setAutomine(false);
    const cancel = await cancelSenderJob(r, t);
    await waitFor("the cancel's broadcast", async () =>
      r.logs.lines().some((l) => l.jobId === cancel.id && l.message === "transaction broadcast") ? true : undefined,
    );
    expect(await decisionOf(r, t)).toBe("cancel-sender");
    // The sending chain still shows the sending side prepared: only the decision can stop the prepare.
    expect(await variantOf(s.sending, t.txData)).not.toBe(completedVariantDigest(t.txData.amount, t.txData.expiry));

    const receivingNonce = await pendingNonce(s, s.receiving);
    await expect(r.finish(await prepareReceiverJob(r, t))).rejects.toThrow(/^SENDER_CANCEL_DECIDED: /);
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);
    expect(await pendingNonce(s, s.receiving)).toBe(receivingNonce);
    // Not cancellable (the refund is already under way): no second refund job is involved.
    expect(r.logs.lines().filter((l) => l.at === "submitter.refund")).toHaveLength(0);

    await s.sending.anvil.setAutomine(true);
    await s.sending.anvil.mine(1);
    await r.finish(cancel);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
  });

  it("a queued sender cancel (parked by the 780 s rule, nothing claimed yet) stops the receiving prepare", async () => {
    const r = (run = await startRun(s, "direct"));
    const t = await makeTransfer(s, { mode: "direct" });
    const cancel = await cancelSenderJob(r, t);
    await waitFor("the cancel to be parked", async () => ((await cancel.getState()) === "delayed" ? true : undefined));
    expect(await decisionOf(r, t)).toBeNull();
    await expect(r.finish(await prepareReceiverJob(r, t))).rejects.toThrow(
      /^SENDER_CANCEL_DECIDED: .*cancel-sender job .* exists \(delayed\)/,
    );
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);
  });

  it("a recorded prepare the receiving chain does not show stops the sender cancel, forced or not", async () => {
    const r = (run = await startRun(s, "direct"));
    const t = await makeTransfer(s, { mode: "direct" });
    await increaseTime(s, 800);
    // A prepare that claimed the transfer: its transaction is somewhere the chain reads do not show (a lagging
    // provider, a mempool), and its job and record are gone, so only the decision tells.
    await r.redis.set(transferDecisionKey(r.prefix, keyOf(t)), "prepare");
    const sendingNonce = await pendingNonce(s, s.sending);
    // One after the other under the job's own id (the submitter refuses a cancel-sender under any other id).
    for (const force of [false, true]) {
      const seen = r.logs.lines().length;
      const job = await r.add(
        SENDING,
        TX_JOB.cancelSender,
        { chainId: SENDING, txData: t.txData, reason: "test", force },
        keyOf(t),
      );
      await waitFor(`a RECEIVER_PREPARE_DECIDED retry (force ${String(force)})`, async () =>
        r.logs
          .lines()
          .slice(seen)
          .some((l) => l.jobId === job.id && l.outcome === "retry" && l.code === "RECEIVER_PREPARE_DECIDED")
          ? true
          : undefined,
      );
      await waitFor("the job removed", async () => {
        await job.remove().catch(() => undefined);
        return (await r.queues.get(SENDING)?.getJob(job.id ?? "")) === undefined;
      });
    }
    expect(await pendingNonce(s, s.sending)).toBe(sendingNonce);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(0n);
    expect(await decisionOf(r, t)).toBe("prepare");
    expect(await r.redis.exists(txRecordKey(r.prefix, SENDING, txJobId(TX_JOB.cancelSender, keyOf(t))))).toBe(0);
  });

  it("a prepare refused before its estimate succeeded leaves no claim: the refund still goes through", async () => {
    const r = (run = await startRun(s, "direct"));
    const liquidity = await routerBalance(s.receiving, s.signerAddress);
    const t = await makeTransfer(s, { mode: "direct", amount: liquidity * 2n });
    await expect(r.finish(await prepareReceiverJob(r, t))).rejects.toThrow(/^NOT_ENOUGH_LIQUIDITY: /);
    expect(await decisionOf(r, t)).toBeNull();
    const refund = await waitFor(
      "the refund job",
      async () => (await r.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(t)))) ?? undefined,
    );
    // Our own refusal's refund: no 780 s wait (docs/decisions.md), it goes out on its first run.
    await r.finish(refund);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
    expect(await decisionOf(r, t)).toBe("cancel-sender");
    // The refund's send record is kept until the transfer ended plus a day (the processor hands the job's expiry on).
    const wantedMs = (t.txData.expiry + RECEIVER_EXPIRY_OFFSET_SEC + RETENTION_MARGIN_SEC) * 1000 - Date.now();
    const recordTtlMs = await r.redis.pttl(txRecordKey(r.prefix, SENDING, txJobId(TX_JOB.cancelSender, keyOf(t))));
    expect(recordTtlMs).toBeGreaterThan(wantedMs - 60_000);
    expect(recordTtlMs).toBeLessThanOrEqual(wantedMs + 1_000);
  });

  it("the claim is atomic: the same decision is re-asserted, the other refused unless it is named as replaced", async () => {
    const r = (run = await startRun(s, "direct", { submitters: false }));
    const t = await makeTransfer(s, { mode: "direct" });
    const params = {
      redis: r.redis,
      prefix: r.prefix,
      transactionId: t.txData.transactionId,
      user: t.txData.user,
      expirySec: t.txData.expiry,
    };
    const both = await Promise.all([
      claimTransferDecision({ ...params, decision: "prepare" }),
      claimTransferDecision({ ...params, decision: "cancel-sender" }),
    ]);
    expect(both.filter((c) => c.ok)).toHaveLength(1);
    const winner = await readTransferDecision(params);
    const loser = winner === "prepare" ? "cancel-sender" : "prepare";
    await expect(claimTransferDecision({ ...params, decision: winner ?? "prepare" })).resolves.toEqual({
      ok: true,
      previous: winner,
    });
    await expect(claimTransferDecision({ ...params, decision: loser })).resolves.toEqual({
      ok: false,
      recorded: winner,
    });
    await expect(claimTransferDecision({ ...params, decision: loser, replacing: winner })).resolves.toEqual({
      ok: true,
      previous: winner,
    });
    expect(await readTransferDecision(params)).toBe(loser);
    // Kept until both sides expired plus a day (the sending side's expiry here), not the contract's 30-day maximum.
    const nowSec = Math.floor(Date.now() / 1000);
    const wantedSec = t.txData.expiry + RECEIVER_EXPIRY_OFFSET_SEC + RETENTION_MARGIN_SEC - nowSec;
    const ttlSec = await r.redis.ttl(transferDecisionKey(r.prefix, keyOf(t)));
    expect(ttlSec).toBeGreaterThan(wantedSec - 60);
    expect(ttlSec).toBeLessThanOrEqual(wantedSec + 1);
    expect(t.txData.expiry - nowSec).toBeGreaterThan(86_400); // a live transfer: the TTL is not the minimum
  });
});

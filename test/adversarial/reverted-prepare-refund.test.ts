import { ZeroHash } from "ethers";
import { transferDecisionKey } from "../../shared/coordination/keys";
import { completedVariantDigest } from "../../shared/protocol/digests";
import { TX_JOB, txJobId } from "../../shared/queues";
import { liveChildPids } from "../harness/child-process";
import { waitFor } from "../harness/wait";
import {
  RECEIVING,
  SENDING,
  drainRouterLiquidity,
  keyOf,
  makeTransfer,
  pendingNonce,
  startLifecycleStack,
  startRun,
  tokenBalance,
  variantOf,
  type LifecycleRun,
  type LifecycleStack,
  type Transfer,
} from "../integration/lifecycle-fixture";

/**
 * "Liquidity moved after the estimate": the router's receiving prepare passes its estimate, then is mined with status
 * 0. Its transfer's decision was claimed as "prepare" before the send, which used to refuse every sender cancel
 * until both expiries plus a day, so the user's funds stayed locked on the sending chain. The refund now replaces
 * that decision once the chain proves the revert final (`confirmations` deep, receiving side not prepared), never
 * before, and never for a prepare still pending. Both submitters run in process on two anvil chains with the real
 * NXTP contracts; the receiving chain mines only when the test says so.
 */

/** The receiving chain's confirmations here: the revert is final once two more blocks are mined on top of it. */
const RECEIVING_CONFIRMATIONS = 3;
/** From the block that makes the revert final to the refund mined: a 3 s park and a run, on a loaded CI host. */
const REFUND_BOUND_MS = 30_000;

describe("adversarial: a receiving prepare mined reverted is refunded once the revert is final (anvil 1337 → 1338, redis)", () => {
  let s: LifecycleStack;
  let run: LifecycleRun | undefined;

  beforeAll(async () => {
    s = await startLifecycleStack();
  });

  afterEach(async () => {
    await s.receiving.anvil.setAutomine(true);
    await run?.stop();
    run = undefined;
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  const prepareReceiverJob = (r: LifecycleRun, t: Transfer) =>
    r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t));
  const decisionOf = (r: LifecycleRun, t: Transfer) => r.redis.get(transferDecisionKey(r.prefix, keyOf(t)));
  const logsOf = (r: LifecycleRun, jobId: string | undefined) => r.logs.lines().filter((l) => l.jobId === jobId);

  /** Broadcasts the transfer's receiving prepare with the receiving chain not mining; returns the job. */
  const pendingPrepare = async (r: LifecycleRun, t: Transfer) => {
    await s.receiving.anvil.setAutomine(false);
    const prepare = await prepareReceiverJob(r, t);
    await waitFor("the receiving prepare's broadcast", async () =>
      logsOf(r, prepare.id).some((l) => l.message === "transaction broadcast") ? true : undefined,
    );
    return prepare;
  };

  it("a prepare reverted on chain: the sender is refunded to the wei once the revert is final (confirmations deep), not before", async () => {
    const r = (run = await startRun(s, "direct", { receivingConfirmations: RECEIVING_CONFIRMATIONS }));
    const t = await makeTransfer(s, { mode: "direct" });
    const sendingNonce = await pendingNonce(s, s.sending);
    const prepare = await pendingPrepare(r, t);

    // Front-run: the router's liquidity is gone when the block with its prepare is mined (the estimate passed).
    const restoreLiquidity = await drainRouterLiquidity(s.receiving, s.signerAddress);
    await s.receiving.anvil.mine(1);
    await expect(r.finish(prepare)).rejects.toThrow(/^TRANSACTION_REVERTED: /);
    await restoreLiquidity();
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);

    const refund = await waitFor(
      "the refund job",
      async () => (await r.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(t)))) ?? undefined,
    );
    // One block deep, then two: each time parked until the revert is final, nothing sent.
    for (const depth of [1, 2]) {
      await waitFor(`the refund parked with the revert ${depth} deep`, async () =>
        logsOf(r, refund.id).some(
          (l) =>
            l.outcome === "delayed" &&
            l.code === "RECEIVER_PREPARE_REVERT_NOT_FINAL" &&
            String(l.error).includes(`reverted ${depth} of ${RECEIVING_CONFIRMATIONS} blocks deep`),
        )
          ? true
          : undefined,
      );
      expect(logsOf(r, refund.id).filter((l) => l.message === "transaction broadcast")).toEqual([]);
      expect(await pendingNonce(s, s.sending)).toBe(sendingNonce);
      expect(await tokenBalance(s.sending, t.fallback)).toBe(0n);
      expect(await decisionOf(r, t)).toBe("prepare");
      await s.receiving.anvil.mine(1);
    }

    const finalAtMs = Date.now();
    await r.finish(refund, REFUND_BOUND_MS);
    console.log(`refunded ${Date.now() - finalAtMs} ms after the revert became final`);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
    expect(await variantOf(s.sending, t.txData)).toBe(completedVariantDigest(t.txData.amount, t.txData.expiry));
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);
    expect(await decisionOf(r, t)).toBe("cancel-sender");
    expect(await pendingNonce(s, s.sending)).toBe(sendingNonce + 1);
  });

  it("a reverted Router contract prepare proves nothing: its signature can be relayed again, so the refund is refused", async () => {
    const r = (run = await startRun(s, "router-contract", { receivingConfirmations: RECEIVING_CONFIRMATIONS }));
    const t = await makeTransfer(s, { mode: "router-contract" });
    const sendingNonce = await pendingNonce(s, s.sending);
    const prepare = await pendingPrepare(r, t);
    const restoreLiquidity = await drainRouterLiquidity(s.receiving, s.routerContract);
    await s.receiving.anvil.mine(1);
    await expect(r.finish(prepare)).rejects.toThrow(/^TRANSACTION_REVERTED: /);
    await restoreLiquidity();
    await s.receiving.anvil.mine(RECEIVING_CONFIRMATIONS);

    const refund = await waitFor(
      "the refund job",
      async () => (await r.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(t)))) ?? undefined,
    );
    await waitFor("the refund refused on the recorded prepare", async () =>
      logsOf(r, refund.id).some(
        (l) =>
          l.outcome === "retry" &&
          l.code === "RECEIVER_PREPARE_DECIDED" &&
          String(l.error).includes("called the Router contract"),
      )
        ? true
        : undefined,
    );
    expect(logsOf(r, refund.id).filter((l) => l.message === "transaction broadcast")).toEqual([]);
    expect(await decisionOf(r, t)).toBe("prepare");
    expect(await pendingNonce(s, s.sending)).toBe(sendingNonce);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(0n);
  });

  it("a recorded prepare still pending is not a reverted one: the refund is refused, and the prepare then lands", async () => {
    const r = (run = await startRun(s, "direct", { receivingConfirmations: RECEIVING_CONFIRMATIONS }));
    const t = await makeTransfer(s, { mode: "direct" });
    const sendingNonce = await pendingNonce(s, s.sending);
    const prepare = await pendingPrepare(r, t);
    expect(await decisionOf(r, t)).toBe("prepare");

    // The refund of a refusal of our own, as the policy enqueues it: it must still wait for the pending prepare.
    const refund = await r.add(
      SENDING,
      TX_JOB.cancelSender,
      { chainId: SENDING, txData: t.txData, reason: "test", force: false, afterOwnRefusal: true },
      keyOf(t),
    );
    await waitFor("the refund refused while the prepare is pending", async () =>
      logsOf(r, refund.id).some((l) => l.outcome === "retry" && l.code === "RECEIVER_BEING_PREPARED")
        ? true
        : undefined,
    );
    expect(await decisionOf(r, t)).toBe("prepare");

    await s.receiving.anvil.setAutomine(true);
    await s.receiving.anvil.mine(RECEIVING_CONFIRMATIONS);
    await r.finish(prepare);
    await expect(r.finish(refund)).rejects.toThrow(/^RECEIVER_LIVE: /);
    expect(await variantOf(s.receiving, t.txData)).not.toBe(ZeroHash);
    expect(await pendingNonce(s, s.sending)).toBe(sendingNonce);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(0n);
  });
});

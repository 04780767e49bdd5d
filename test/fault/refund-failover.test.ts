import { Wallet } from "ethers";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import type { RouterConfig } from "../../shared/config/types";
import { abiCancelArgs } from "../../shared/protocol/router-signatures";
import { TX_JOB, txJobId } from "../../shared/queues";
import { transferDecisionKey, txRecordKey } from "../../shared/coordination/keys";
import { liveChildPids } from "../harness/child-process";
import { nxtpContractAt } from "../harness/deploy";
import { waitFor } from "../harness/wait";
import {
  FAST,
  RECEIVING,
  SENDING,
  keyOf,
  makeTransfer,
  startLifecycleStack,
  startRun,
  tokenBalance,
  type LifecycleRun,
  type LifecycleStack,
  type Transfer,
} from "../integration/lifecycle-fixture";
import { transferEvents } from "../e2e/e2e-user";
import { startRpcProxy, type RpcProxy } from "../harness/rpc-proxy";

/**
 * "A withdrawal is paid twice after a Redis failover", its last paragraph: the same loss can erase a
 * cancel-sender decision after the refund was broadcast, and a re-run of the prepare-receiver must not then prepare
 * the receiving side too (the user refunded and paid). The failover is reduced to what it leaves behind: the refund
 * in the sending chain's mempool (anvil's automine off), and no decision, cancel-sender job, send record or
 * nonce-jobs entry in Redis (the refund is sent straight from the router's key, so none was ever written). Only the
 * receiving chain's submitter runs (FAST poll: the test is about what is sent, not when); the sending chain's
 * submitter would see the refund as a nonce gap of its own.
 */
describe("fault: a refund whose Redis records a failover lost keeps the receiving side unprepared", () => {
  let s: LifecycleStack;
  let run: LifecycleRun | undefined;
  let submitter: RunningSubmitter | undefined;
  let proxy: RpcProxy | undefined;

  beforeAll(async () => {
    s = await startLifecycleStack();
  }, 120_000);

  afterEach(async () => {
    await s.sending.anvil.setAutomine(true);
    await submitter?.stop();
    submitter = undefined;
    await run?.stop();
    run = undefined;
    await proxy?.down();
    proxy = undefined;
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  /** The router's refund of the sending side, broadcast and left in the mempool; returns its hash. */
  const broadcastRefund = async (t: Transfer): Promise<string> => {
    await s.sending.anvil.setAutomine(false);
    const router = Wallet.fromPhrase(s.mnemonic).connect(s.sending.provider);
    expect(router.address).toBe(s.signerAddress);
    const tm = nxtpContractAt("TransactionManager", s.sending.deployment.transactionManager, router);
    const tx = (await tm
      .getFunction("cancel")
      .send(abiCancelArgs({ txData: t.txData, signature: "0x", encodedMeta: "0x" }))) as { hash: string };
    return tx.hash;
  };

  /** What the promoted replica lacks: the decision, the cancel-sender job and its send record. */
  const expectNoRefundInRedis = async (r: LifecycleRun, t: Transfer): Promise<void> => {
    const cancelId = txJobId(TX_JOB.cancelSender, keyOf(t));
    expect(await r.redis.exists(transferDecisionKey(r.prefix, keyOf(t)))).toBe(0);
    expect(await r.redis.exists(txRecordKey(r.prefix, SENDING, cancelId))).toBe(0);
    expect(await r.queues.get(SENDING)?.getJob(cancelId)).toBeUndefined();
  };

  const receivingPrepared = async (t: Transfer): Promise<number> =>
    (await transferEvents(s.receiving, "prepared", t.txData.transactionId)).length;

  const startReceivingSubmitter = async (r: LifecycleRun, config: RouterConfig): Promise<void> => {
    submitter = await startSubmitter({ config, logger: r.logs.logger, chainId: RECEIVING, options: FAST });
  };

  it("the refund in the sending chain's mempool: the prepare-receiver ends without preparing, and the user is refunded once", async () => {
    const r = (run = await startRun(s, "direct", { submitters: false }));
    await startReceivingSubmitter(r, r.config);
    const t = await makeTransfer(s, { mode: "direct" });
    const refund = await broadcastRefund(t);
    await expectNoRefundInRedis(r, t);

    const job = await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t));
    await expect(r.finish(job, 60_000)).rejects.toThrow(/^SENDER_COMPLETED: .*pending/);
    expect(await receivingPrepared(t)).toBe(0);

    await s.sending.anvil.mine(1);
    expect((await s.sending.provider.getTransactionReceipt(refund))?.status).toBe(1);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
    expect(await receivingPrepared(t)).toBe(0);
  }, 120_000);

  it("a sending-chain provider whose pending reads miss the refund: the job parks (no attempt spent) and, once the refund is mined, ends without preparing", async () => {
    proxy = await startRpcProxy(s.sending.anvil.url);
    // Its eth_call answers every block tag from the latest block: a node whose mempool never got the refund.
    proxy.callAt("latest");
    const r = (run = await startRun(s, "direct", { submitters: false }));
    const sendingChain = r.config.chainConfig[String(SENDING)];
    if (!sendingChain) throw new Error("no sending chain in the config");
    await startReceivingSubmitter(r, {
      ...r.config,
      chainConfig: { ...r.config.chainConfig, [String(SENDING)]: { ...sendingChain, providers: [proxy.url] } },
    });
    const t = await makeTransfer(s, { mode: "direct" });
    const refund = await broadcastRefund(t);
    await expectNoRefundInRedis(r, t);

    const job = await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t));
    // The job's first verdict: parked, or (without the proof) finished, having prepared the receiving side.
    const parkedOrDone = async () =>
      r.logs
        .lines()
        .find(
          (l) =>
            l.at === "submitter.job" &&
            l.jobId === job.id &&
            (l.code === "SENDER_REFUND_UNSETTLED" || l.outcome === "completed"),
        );
    const first = await waitFor("the prepare-receiver's first verdict", parkedOrDone, 60_000);
    expect(await receivingPrepared(t)).toBe(0);
    expect(first).toMatchObject({ outcome: "delayed", code: "SENDER_REFUND_UNSETTLED" });
    const waiting = await r.queues.get(RECEIVING)?.getJob(job.id ?? "");
    expect(waiting?.attemptsMade).toBe(0);
    expect(await receivingPrepared(t)).toBe(0);

    await s.sending.anvil.mine(1);
    expect((await s.sending.provider.getTransactionReceipt(refund))?.status).toBe(1);
    await expect(r.finish(job, 60_000)).rejects.toThrow(/^SENDER_COMPLETED: /);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
    expect(await receivingPrepared(t)).toBe(0);
  }, 120_000);
});

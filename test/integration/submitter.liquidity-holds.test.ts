import { Wallet } from "ethers";
import type { Job } from "bullmq";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import type { RouterConfig } from "../../shared/config/types";
import { TX_JOB, txJobId, type CancelSenderJobData, type TxJobData } from "../../shared/queues";
import { liquidityHoldsKey } from "../../shared/coordination/keys";
import { readTransferDecision } from "../../shared/coordination/transfer-decision";
import { liveChildPids } from "../harness/child-process";
import { startRpcProxy, type RpcProxy } from "../harness/rpc-proxy";
import {
  FAST,
  RECEIVING,
  SENDING,
  keyOf,
  makeTransfer,
  routerBalance,
  startLifecycleStack,
  startRun,
  type LifecycleRun,
  type LifecycleStack,
  type Transfer,
} from "./lifecycle-fixture";
import { waitFor } from "../harness/wait";

/**
 * The receiving chain's submitters talk to it through a proxy whose eth_estimateGas runs
 * against `latest` (as some RPCs do): the estimate then never sees our own pending transactions, so only the
 * liquidity holds in Redis keep a prepare from being sent into a revert (#P:018) with its decision claimed.
 */
describe("liquidity holds in Redis", () => {
  let s: LifecycleStack;
  let proxy: RpcProxy;
  let run: LifecycleRun | undefined;
  const submitters: RunningSubmitter[] = [];

  beforeAll(async () => {
    s = await startLifecycleStack();
    proxy = await startRpcProxy(s.receiving.anvil.url);
    proxy.estimateGasAt("latest");
  });

  afterEach(async () => {
    await s.receiving.anvil.setAutomine(true);
    await Promise.all(submitters.splice(0).map((r) => r.stop()));
    await run?.stop();
    run = undefined;
  });

  afterAll(async () => {
    await proxy?.down();
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  /** The run's config with the receiving chain behind the proxy. */
  const viaProxy = (config: RouterConfig): RouterConfig => {
    const chain = config.chainConfig[String(RECEIVING)];
    return {
      ...config,
      chainConfig: { ...config.chainConfig, [String(RECEIVING)]: { ...chain, providers: [proxy.url] } },
    };
  };
  const receivingSubmitter = async (
    r: LifecycleRun,
    options: Parameters<typeof startSubmitter>[0]["options"] = FAST,
  ): Promise<RunningSubmitter> => {
    const started = await startSubmitter({
      config: viaProxy(r.config),
      logger: r.logs.logger,
      chainId: RECEIVING,
      options,
    });
    submitters.push(started);
    return started;
  };
  const broadcastsOf = (r: LifecycleRun, jobId: string | undefined): Array<Record<string, unknown>> =>
    r.logs.lines().filter((l) => l.message === "transaction broadcast" && l.jobId === jobId);
  const waitForBroadcast = (r: LifecycleRun, job: Job<TxJobData>): Promise<Record<string, unknown>> =>
    waitFor(`${String(job.id)} broadcast`, async () => broadcastsOf(r, job.id)[0]);
  const waitForParked = (r: LifecycleRun, job: Job<TxJobData>): Promise<Record<string, unknown>> =>
    waitFor(`${String(job.id)} parked behind the holds`, async () =>
      r.logs
        .lines()
        .find(
          (l) =>
            l.at === "submitter.job" &&
            l.jobId === job.id &&
            l.outcome === "delayed" &&
            l.code === "LIQUIDITY_IN_FLIGHT",
        ),
    );
  const addPrepare = (r: LifecycleRun, t: Transfer): Promise<Job<TxJobData>> =>
    r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t));
  /** The refused prepare refunds the user now: a cancel-sender job, and no "prepare" decision to refuse it. */
  const expectRefundPossible = async (r: LifecycleRun, t: Transfer): Promise<void> => {
    const refund = await waitFor(
      "the refund job",
      async () => (await r.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(t)))) ?? undefined,
    );
    expect((refund.data as CancelSenderJobData).reason).toBe("NOT_ENOUGH_LIQUIDITY");
    await expect(
      readTransferDecision({
        redis: r.redis,
        prefix: r.prefix,
        transactionId: t.txData.transactionId,
        user: t.txData.user,
      }),
    ).resolves.toBeUndefined();
  };
  const sixtyPercent = async (): Promise<bigint> => ((await routerBalance(s.receiving, s.signerAddress)) * 6n) / 10n;

  it("a takeover keeps the hold of the resumed prepare: the next prepare waits, then is refused and refunded", async () => {
    const r = await startRun(s, "direct", { submitters: false });
    run = r;
    const amount = await sixtyPercent();
    const [a, b] = [
      await makeTransfer(s, { mode: "direct", amount }),
      await makeTransfer(s, { mode: "direct", amount }),
    ];
    await s.receiving.anvil.setAutomine(false);
    const first = await receivingSubmitter(r);
    const jobA = await addPrepare(r, a);
    await waitForBroadcast(r, jobA);
    const standby = await receivingSubmitter(r);
    expect(standby.role()).toBe("standby");

    // The sender goes away with A's prepare unmined; the standby takes the lease and resumes A from its record.
    await first.stop();
    await waitFor("the standby sending", async () => (standby.role() === "sender" ? true : undefined));
    const holds = await r.redis.hgetall(liquidityHoldsKey(r.prefix, RECEIVING, s.signerAddress));
    expect(JSON.parse(holds[String(jobA.id)] ?? "{}")).toMatchObject({ amount: a.bid.amountReceived });

    const jobB = await addPrepare(r, b);
    await waitForParked(r, jobB);
    expect(broadcastsOf(r, jobB.id)).toEqual([]);

    await s.receiving.anvil.setAutomine(true);
    await s.receiving.anvil.mine(1);
    await expect(r.finish(jobA)).resolves.toMatchObject({ transactionHash: expect.stringMatching(/^0x/) });
    await expect(r.finish(jobB)).rejects.toThrow(/^NOT_ENOUGH_LIQUIDITY: /);
    await expectRefundPossible(r, b);
    expect(broadcastsOf(r, jobB.id)).toEqual([]);
  });

  it("a pending withdrawal holds its amount: a prepare behind it waits, then is refused and refunded", async () => {
    const r = await startRun(s, "direct", { submitters: false });
    run = r;
    const amount = await sixtyPercent();
    const t = await makeTransfer(s, { mode: "direct", amount });
    await s.receiving.anvil.setAutomine(false);
    await receivingSubmitter(r);
    const withdrawal = await r.add(
      RECEIVING,
      TX_JOB.removeLiquidity,
      {
        chainId: RECEIVING,
        assetId: s.receiving.deployment.token,
        amount: amount.toString(),
        recipientAddress: Wallet.createRandom().address,
        requestId: "holds-test-withdrawal",
      },
      "holds-test-withdrawal",
    );
    await waitForBroadcast(r, withdrawal);
    const prepare = await addPrepare(r, t);
    await waitForParked(r, prepare);
    expect(broadcastsOf(r, prepare.id)).toEqual([]);

    const before = await routerBalance(s.receiving, s.signerAddress);
    await s.receiving.anvil.setAutomine(true);
    await s.receiving.anvil.mine(1);
    await expect(r.finish(withdrawal)).resolves.toMatchObject({ transactionHash: expect.stringMatching(/^0x/) });
    await expect(routerBalance(s.receiving, s.signerAddress)).resolves.toBe(before - amount);
    await expect(r.finish(prepare)).rejects.toThrow(/^NOT_ENOUGH_LIQUIDITY: /);
    await expectRefundPossible(r, t);
    expect(broadcastsOf(r, prepare.id)).toEqual([]);
  });

  it("a withdrawal whose BullMQ lock is lost past the stall limit is not failed: it completes once mined", async () => {
    const r = await startRun(s, "direct", { submitters: false });
    run = r;
    const amount = 1000n;
    await s.receiving.anvil.setAutomine(false);
    // Stall limit 0: the first lost lock is past it (BullMQ would fail the job at once). The stalled check runs
    // every 300 ms (15 s by default) so the lost lock is acted on while the withdrawal is still unmined.
    await receivingSubmitter(r, { ...FAST, maxStalledCount: 0, stalledIntervalMs: 300 });
    const withdrawal = await r.add(
      RECEIVING,
      TX_JOB.removeLiquidity,
      {
        chainId: RECEIVING,
        assetId: s.receiving.deployment.token,
        amount: amount.toString(),
        recipientAddress: Wallet.createRandom().address,
        requestId: "holds-test-lock-loss",
      },
      "holds-test-lock-loss",
    );
    const sent = await waitForBroadcast(r, withdrawal);
    // The lock lapses as it does for a frozen process: gone, and the job in the stalled set of the next check.
    const queue = r.queues.get(RECEIVING);
    if (!queue) throw new Error("no receiving queue");
    await r.redis.del(`${queue.toKey(String(withdrawal.id))}:lock`);
    await r.redis.sadd(queue.keys.stalled, String(withdrawal.id));
    await waitFor("the job run again past the stall limit", async () =>
      r.logs
        .lines()
        .find(
          (l) =>
            l.jobId === withdrawal.id &&
            l.message === "job stalled past the limit, but it has a transaction: it keeps running from its record",
        ),
    );

    const before = await routerBalance(s.receiving, s.signerAddress);
    await s.receiving.anvil.setAutomine(true);
    await s.receiving.anvil.mine(1);
    await expect(r.finish(withdrawal)).resolves.toMatchObject({ transactionHash: sent.transactionHash });
    await expect(routerBalance(s.receiving, s.signerAddress)).resolves.toBe(before - amount);
    const job = await queue.getJob(String(withdrawal.id));
    expect({ state: await job?.getState(), failedReason: job?.failedReason }).toEqual({
      state: "completed",
      failedReason: undefined,
    });
  });
  it("a job stalled past the limit with nothing on chain fails (JOB_STALLED) before it sends anything", async () => {
    const r = await startRun(s, "direct", { submitters: false });
    run = r;
    const withdrawal = await r.add(
      RECEIVING,
      TX_JOB.removeLiquidity,
      {
        chainId: RECEIVING,
        assetId: s.receiving.deployment.token,
        amount: "1000",
        recipientAddress: Wallet.createRandom().address,
        requestId: "holds-test-poison",
      },
      "holds-test-poison",
    );
    const queue = r.queues.get(RECEIVING);
    if (!queue) throw new Error("no receiving queue");
    // As if it had killed the process it ran in 3 times (BullMQ's stalled counter), with no record written.
    await r.redis.hset(queue.toKey(String(withdrawal.id)), "stc", "3");
    await receivingSubmitter(r, { ...FAST, maxStalledCount: 2 });
    await expect(r.finish(withdrawal)).rejects.toThrow(/^JOB_STALLED: /);
    expect(broadcastsOf(r, withdrawal.id)).toEqual([]);
  });
});

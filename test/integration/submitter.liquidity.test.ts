import { TX_JOB, txJobId, type CancelSenderJobData } from "../../shared/queues";
import { liveChildPids } from "../harness/child-process";
import {
  RECEIVING,
  SENDING,
  keyOf,
  makeTransfer,
  routerBalance,
  startLifecycleStack,
  startRun,
  type LifecycleRun,
  type LifecycleStack,
} from "./lifecycle-fixture";
import { waitFor } from "../harness/wait";

/**
 * Jobs of a chain run concurrently, so two receiving prepares can both see enough liquidity before either is
 * mined. The second must wait for the first (LIQUIDITY_IN_FLIGHT, parked, no decision claimed, nothing sent)
 * and then be refused on the chain's real balance, with the refund enqueued, instead of reverting on chain.
 */
describe("concurrent receiving prepares do not over-commit liquidity", () => {
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

  it("two prepares of 60 % each: one is sent, the other waits for it, then is refused and refunded", async () => {
    const r = await startRun(s, "direct");
    run = r;
    const liquidity = await routerBalance(s.receiving, s.signerAddress);
    const [a, b] = [
      await makeTransfer(s, { mode: "direct", amount: (liquidity * 6n) / 10n }),
      await makeTransfer(s, { mode: "direct", amount: (liquidity * 6n) / 10n }),
    ];
    await s.receiving.anvil.setAutomine(false);
    const jobs = await Promise.all(
      [a, b].map((t) => r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t))),
    );

    const parked = await waitFor("one prepare parked behind the other", async () =>
      r.logs
        .lines()
        .find((l) => l.at === "submitter.job" && l.outcome === "delayed" && l.code === "LIQUIDITY_IN_FLIGHT"),
    );
    const waitingId = String(parked.jobId);
    const sentJob = jobs.find((j) => j.id !== waitingId);
    const waitingJob = jobs.find((j) => j.id === waitingId);
    if (!sentJob || !waitingJob) throw new Error("parked job is none of the two");
    await waitFor("the first prepare's broadcast", async () =>
      r.logs.lines().some((l) => l.message === "transaction broadcast" && l.jobId === sentJob.id) ? true : undefined,
    );
    expect(r.logs.lines().filter((l) => l.message === "transaction broadcast" && l.jobId === waitingId)).toEqual([]);

    await s.receiving.anvil.setAutomine(true);
    await s.receiving.anvil.mine(1);
    await expect(r.finish(sentJob)).resolves.toMatchObject({ transactionHash: expect.stringMatching(/^0x/) });
    await expect(r.finish(waitingJob)).rejects.toThrow(/^NOT_ENOUGH_LIQUIDITY: /);
    const waitingTransfer = waitingJob.id === txJobId(TX_JOB.prepareReceiver, keyOf(a)) ? a : b;
    const refund = await waitFor(
      "the refund job",
      async () =>
        (await r.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(waitingTransfer)))) ?? undefined,
    );
    expect((refund.data as CancelSenderJobData).reason).toBe("NOT_ENOUGH_LIQUIDITY");
    expect(r.logs.lines().filter((l) => l.message === "transaction broadcast" && l.jobId === waitingId)).toEqual([]);
  });
});

import { Wallet, parseEther } from "ethers";
import { isProcessAlive, liveChildPids } from "../harness/child-process";
import { sendTx } from "../harness/deploy";
import { RECEIPT_TIMEOUT_MS } from "../../scripts/local/receipts";
import { startStackAnd, type Stack } from "../harness/stack";

/**
 * A stack start that fails or overruns its deadline stops what it started before it throws: jest's beforeAll
 * timeout stops nothing, and children left running fail the next files' leak checks.
 */
const CHAIN = 1337;

/**
 * The deadline of the stuck start: only the stuck step may reach it, so it must outlast the steps before (anvil
 * and redis up, NXTP deployed), which took 2.3-3.3 s on a 2-core machine at load 5-6 and have no bound of their
 * own on a busier one (a 3 s deadline was met while deploying). 15 s leaves them 4-5 times that, and stays below
 * the receipt wait's own bound (RECEIPT_TIMEOUT_MS, 30 s, counted from the stuck mint), so the deadline, not
 * the receipt wait, is what ends the start.
 */
const STUCK_START_DEADLINE_MS = 15_000;

function pidsOf(stack: Stack): number[] {
  return [...[...stack.chains.values()].map((c) => c.anvil.pid), stack.redis?.pid ?? -1].filter((p) => p > 0);
}

describe("stack start: a failed or overdue start leaves no child running", () => {
  afterAll(() => {
    expect(liveChildPids()).toEqual([]);
  });

  it("a preparation stuck on a receipt that never comes: the deadline error names the step, and every server is stopped", async () => {
    let pids: number[] = [];
    const startedAtMs = Date.now();
    const outcome = await startStackAnd(
      { chainIds: [CHAIN], nats: false },
      async (stack) => {
        pids = pidsOf(stack);
        // Automine off: the mint is never mined, so the receipt wait (30 s bound) outlives the deadline.
        await stack.chain(CHAIN).anvil.setAutomine(false);
        await sendTx(stack.chain(CHAIN).deployment.contracts.token, "mint", [Wallet.createRandom().address, 1n]);
        return stack;
      },
      STUCK_START_DEADLINE_MS,
    ).catch((err: unknown) => err);
    const elapsedMs = Date.now() - startedAtMs;

    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toBe(
      `stack start did not finish within ${STUCK_START_DEADLINE_MS} ms (at: preparing the stack (funding, approvals))`,
    );
    expect(pids).toHaveLength(2);
    expect(pids.filter(isProcessAlive)).toEqual([]);
    expect(liveChildPids()).toEqual([]);
    // The start ended at its deadline, then the stops (bounded at 8 s together): it did not wait on for the stuck
    // receipt, whose own bound (30 s from the mint, itself after the deploy) is the next thing that would end it.
    expect(elapsedMs).toBeLessThan(RECEIPT_TIMEOUT_MS);
  }, 45_000);

  it("a preparation that throws: its error comes out as it is, and every server is stopped", async () => {
    let pids: number[] = [];
    const outcome = await startStackAnd({ chainIds: [CHAIN], nats: false }, async (stack) => {
      pids = pidsOf(stack);
      const poor = Wallet.createRandom().connect(stack.chain(CHAIN).provider);
      // No gas: refused before sending.
      await poor.sendTransaction({ to: poor.address, value: parseEther("1") });
      return stack;
    }).catch((err: unknown) => err);

    expect((outcome as Error).message).toMatch(/insufficient funds/i);
    expect(pids).toHaveLength(2);
    expect(pids.filter(isProcessAlive)).toEqual([]);
    expect(liveChildPids()).toEqual([]);
  }, 30_000);
});

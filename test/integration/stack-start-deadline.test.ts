import { Wallet, parseEther } from "ethers";
import { isProcessAlive, liveChildPids } from "../harness/child-process";
import { sendTx } from "../harness/deploy";
import { startStackAnd, type Stack } from "../harness/stack";

/**
 * A stack start that fails or overruns its deadline stops what it started before it throws: jest's beforeAll
 * timeout stops nothing, and children left running fail the next files' leak checks.
 */
const CHAIN = 1337;

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
        // Automine off: the mint is never mined, so the receipt wait (30 s bound) outlives the 3 s deadline.
        await stack.chain(CHAIN).anvil.setAutomine(false);
        await sendTx(stack.chain(CHAIN).deployment.contracts.token, "mint", [Wallet.createRandom().address, 1n]);
        return stack;
      },
      3_000,
    ).catch((err: unknown) => err);
    const elapsedMs = Date.now() - startedAtMs;

    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toBe(
      "stack start did not finish within 3000 ms (at: preparing the stack (funding, approvals))",
    );
    expect(pids).toHaveLength(2);
    expect(pids.filter(isProcessAlive)).toEqual([]);
    expect(liveChildPids()).toEqual([]);
    // The deadline, then at most the stop's SIGTERM grace and SIGKILL wait: far inside jest's bound.
    expect(elapsedMs).toBeLessThan(3_000 + 8_000);
  }, 30_000);

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

import { Transaction } from "ethers";
import { sleep } from "../../shared/timing";
import { RECEIVING, startE2eStack, stopE2eStack } from "../e2e/e2e-fixture";
import { useStack } from "../harness/stack";
import { transferEvents, userFulfill, userPrepare, waitForEvent } from "../e2e/e2e-user";
import { assertDistBuilt, startRouterProcs } from "./router-procs";
import { auditRouterTxs, describeAudit, fundUsers } from "./swap-audit";

/**
 * A re-org while a router transaction waits for its confirmations (3 on the receiving chain). The
 * block holding the router's prepare is reverted away (anvil evm_snapshot / evm_revert, which drops its
 * transactions), then the chain grows again. The router must notice, send the prepare again, and end with
 * exactly one prepare on the canonical chain, the swap completing.
 */
const CONFIRMATIONS = 3;
const BLOCK_EVERY_MS = 300;

describe("fault: re-org during confirmation", () => {
  beforeAll(assertDistBuilt);
  const s = useStack({ name: "fault-reorg", start: startE2eStack, stop: stopE2eStack });
  let ticking = false;
  let ticker: Promise<void> = Promise.resolve();

  /**
   * `dropped`: the re-org loses the router's transaction (anvil's evm_revert drops it), so the router must send
   * it again; otherwise it comes back into the pool, as on a real network, and is mined again higher up: the
   * router must wait its confirmations there.
   */
  async function reorgAfterPrepare(dropped: boolean): Promise<void> {
    const [user] = await fundUsers(s, 1, 1);
    const fromBlock = await s.receiving.provider.getBlockNumber();
    const procs = s.stopAfterTest(
      await startRouterProcs(s, s.scratchDir, {
        // confirmationTimeoutMs shortened (shipped 90 s): a dropped prepare is sent again (bumped) once it has been
        // unmined that long, which must fall within the test's 45 s wait. Confirmations and polling stay as shipped.
        chainOverrides: { [RECEIVING]: { confirmations: CONFIRMATIONS, confirmationTimeoutMs: 10_000 } },
      }),
    );
    // Registered after the processes: the block ticker stops before they do.
    s.afterTest(async () => {
      ticking = false;
      await ticker;
    });
    const fail =
      (what: string) =>
      (err: unknown): never => {
        throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}\n${procs.outputs()}`);
      };
    // Nothing mines on 1338 but the router's own transactions until the re-org: its prepare waits for confirmations.
    const snapshot = await s.receiving.anvil.rpc<string>("evm_snapshot");
    const t = await userPrepare(user);
    const first = await waitForEvent(s.receiving, "prepared", t.transactionId, 30_000).catch(
      fail("the router's first prepare"),
    );
    const sent = await s.receiving.provider.getTransaction(first.transactionHash);
    if (!sent) throw new Error("the router's prepare is not known to the node");
    const raw = Transaction.from(sent).serialized;
    expect(await s.receiving.anvil.rpc<boolean>("evm_revert", [snapshot])).toBe(true);
    expect(await s.receiving.provider.getTransactionReceipt(first.transactionHash)).toBeNull();
    if (!dropped) {
      await s.receiving.anvil.mine(2); // the new branch is longer before the transaction lands again
      await s.receiving.anvil.rpc<string>("eth_sendRawTransaction", [raw]);
    }
    ticking = true;
    ticker = (async () => {
      while (ticking) {
        await s.receiving.anvil.mine(1).catch(() => undefined);
        await sleep(BLOCK_EVERY_MS);
      }
    })();
    const again = await waitForEvent(s.receiving, "prepared", t.transactionId, 45_000).catch(
      fail(dropped ? "the prepare sent again after the re-org" : "the prepare mined again"),
    );
    await userFulfill(user, again.txData);
    await waitForEvent(s.sending, "fulfilled", t.transactionId, 45_000).catch(fail("the router's claim"));
    ticking = false;
    await ticker;
    expect(await transferEvents(s.receiving, "prepared", t.transactionId)).toHaveLength(1);
    const audit = await auditRouterTxs(s.receiving, s.router, fromBlock + 1);
    process.stdout.write(
      `re-org (${dropped ? "transaction dropped" : "transaction back in the pool"}): prepare ${first.transactionHash} in block ${first.blockNumber} reverted; ` +
        `canonical ${again.transactionHash} in block ${again.blockNumber}\n${describeAudit(audit)}\n`,
    );
    expect(audit.txs.filter((x) => x.method === "prepare").map((x) => x.transactionId)).toEqual([t.transactionId]);
    expect({ reverted: audit.reverted, gaps: audit.nonceGaps }).toEqual({ reverted: [], gaps: [] });
  }

  it("the prepare's block is re-orged away and the transaction mined again higher up: one prepare, the swap completes", async () => {
    await reorgAfterPrepare(false);
  }, 120_000);

  it("the prepare's block is re-orged away and the transaction lost: the router sends it again, one prepare, the swap completes", async () => {
    await reorgAfterPrepare(true);
  }, 120_000);
});

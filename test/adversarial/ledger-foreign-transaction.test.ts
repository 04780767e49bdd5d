import { parseEther, ZeroAddress } from "ethers";
import { createLogger } from "../../shared/logging/create-logger";
import { routerMetrics } from "../../shared/metrics/router-metrics";
import { bookTransactionJobId } from "../../shared/queues/ledger-jobs";
import { startLedger } from "../../services/ledger/start-ledger";
import { anvilWallet } from "../harness/anvil";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { CHAIN_ID, useLedgerSuite } from "../integration/ledger-fixture";

const logger = createLogger({ level: "silent", service: "ledger" });

/**
 * Anyone can put a `book-transaction` job on the ledger queue's contract path (a producer fooled, or a stranger's
 * hash relayed by a poller). The books take only what the chain says is the router's: gas only when the router's
 * signer sent the transaction, events only when they name this router.
 */
describe("adversarial: a book-transaction naming someone else's transaction", () => {
  const suite = useLedgerSuite("ledger_foreign");

  it("books no gas against the router when the router did not send it, and no event of another router", async () => {
    const { s } = suite;
    const stranger = anvilWallet(3, s.chain.provider);
    const otherRouter = anvilWallet(4, s.chain.provider);
    const tmAs = (runner: typeof stranger) =>
      nxtpContractAt("TransactionManager", s.chain.deployment.transactionManager, runner);
    // Another router on the same TransactionManager, adding its own liquidity.
    await sendTx(
      nxtpContractAt("TransactionManager", s.chain.deployment.transactionManager, s.chain.deployer),
      "addRouter",
      [otherRouter.address],
    );
    const othersEvent = await sendTx(tmAs(otherRouter), "addLiquidity", [parseEther("1"), ZeroAddress], {
      value: parseEther("1"),
    });
    // A stranger adding liquidity FOR our router: the event is ours (our balance moved), the gas is not.
    const forUs = await sendTx(
      tmAs(stranger),
      "addLiquidityFor",
      [parseEther("2"), ZeroAddress, suite.routerWallet().address],
      {
        value: parseEther("2"),
      },
    );
    // A stranger's plain transfer, named with a kind as if the router had sent it.
    const plain = await stranger.sendTransaction({ to: otherRouter.address, value: 1n });
    await plain.wait();

    const gasBefore = (await routerMetrics().gasSpentWei.get()).values.reduce((sum, v) => sum + v.value, 0);
    const ledger = await startLedger({ config: suite.config, logger, env: {} });
    try {
      await suite.enqueue(othersEvent.hash, "add-liquidity");
      await suite.enqueue(forUs.hash, "add-liquidity");
      await suite.enqueue(plain.hash, "prepare");
      for (const hash of [othersEvent.hash, forUs.hash, plain.hash]) await suite.waitDone(hash);
    } finally {
      await ledger.stop();
    }

    const transactions = await suite.pool.query("SELECT hash FROM ledger_transactions");
    expect(transactions.rows).toEqual([]);
    const events = await suite.pool.query<{ tx_hash: string; router: string; amount: string }>(
      "SELECT tx_hash, router, amount FROM ledger_events",
    );
    expect(events.rows).toEqual([
      { tx_hash: forUs.hash, router: suite.routerWallet().address.toLowerCase(), amount: parseEther("2").toString() },
    ]);
    const outcome = async (hash: string) =>
      (await suite.queue.getJob(bookTransactionJobId(CHAIN_ID, hash)))?.returnvalue as { outcome: string };
    expect((await outcome(othersEvent.hash)).outcome).toBe("not_ours");
    expect((await outcome(plain.hash)).outcome).toBe("not_ours");
    expect((await outcome(forUs.hash)).outcome).toBe("booked");
    const gasAfter = (await routerMetrics().gasSpentWei.get()).values.reduce((sum, v) => sum + v.value, 0);
    expect(gasAfter).toBe(gasBefore);
  });
});

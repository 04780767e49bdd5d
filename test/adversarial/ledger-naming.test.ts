import { Queue } from "bullmq";
import { Wallet, ZeroAddress, parseEther } from "ethers";
import { ledgerNamesOf } from "../../services/poller/ledger-naming";
import { preparedRecord } from "../../services/poller/sources/log-mapping";
import { decodeTmLog } from "../../shared/chain/tm-log-decoder";
import { LEDGER_QUEUE_NAME, type BookTransactionJobData } from "../../shared/queues";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { anvilWallet } from "../harness/anvil";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { waitFor } from "../harness/wait";
import {
  SENDING,
  ledgerConfig,
  ledgerJobsOf,
  startTestPollers,
  usePollerSuite,
  userPrepare,
} from "../integration/poller-fixture";

/**
 * Attacker: anyone who makes TransactionManager events on a chain the router polls (another router, or a user of
 * another router) to get transactions the router did not take part in booked in its ledger: their amounts in its
 * figures, their gas in its costs. Only this router's events are ever named.
 */
describe("ledger naming: another router's TransactionManager events", () => {
  const s = usePollerSuite("adversarial-ledger-naming");

  it("another router's prepare and LiquidityAdded on the same chain are never named; ours right after them is", async () => {
    const config = ledgerConfig(s, s.prefix);
    await startTestPollers(s, config);
    const ledgerQueue = new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, {
      connection: s.queues.redis,
      prefix: s.prefix,
    });
    try {
      const other = Wallet.createRandom();
      const otherSigner = createMnemonicSigner(other.mnemonic?.phrase ?? "");
      await sendTx(s.sending.deployment.contracts.transactionManager, "addRouter", [other.address]);
      // A user of the other router prepares with it, and someone adds liquidity for it, on the chain we poll.
      const theirs = await userPrepare({ ...s, routerSigner: otherSigner }, { user: 7 });
      expect(theirs.invariant.router).toBe(other.address);
      const funder = anvilWallet(3, s.sending.provider);
      const tm = nxtpContractAt("TransactionManager", s.sending.deployment.transactionManager, funder);
      const theirLiquidity = await sendTx(tm, "addLiquidityFor", [parseEther("1"), ZeroAddress, other.address], {
        value: parseEther("1"),
      });
      const ours = await userPrepare(s, { user: 8 });

      const named = await waitFor(
        "our prepare named",
        async () => {
          const jobs = await ledgerJobsOf(ledgerQueue);
          return jobs.some((j) => j.hash === ours.receipt.hash) ? jobs : undefined;
        },
        10_000,
      );
      expect(named.map((j) => j.hash)).toEqual([ours.receipt.hash]);
      expect(named.map((j) => j.hash)).not.toContain(theirs.receipt.hash);
      expect(named.map((j) => j.hash)).not.toContain(theirLiquidity.hash);

      // A record of theirs reaching a batch anyway (a subgraph answering for the wrong router) is not named either.
      const log = theirs.receipt.logs.find((l) => decodeTmLog(l)?.kind === "prepared");
      const event = log === undefined ? undefined : decodeTmLog(log);
      if (event?.kind !== "prepared") throw new Error("no TransactionPrepared in their receipt");
      const record = preparedRecord(SENDING, event, 0);
      expect(
        ledgerNamesOf({ chainId: SENDING, routerAddress: await s.routerSigner.getAddress() }, { records: [record] }),
      ).toEqual([]);
    } finally {
      await ledgerQueue.close();
    }
  });
});

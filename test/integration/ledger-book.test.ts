import { parseEther, ZeroAddress } from "ethers";
import { createLogger } from "../../shared/logging/create-logger";
import { routerMetrics } from "../../shared/metrics/router-metrics";
import { bookTransactionJobId } from "../../shared/queues/ledger-jobs";
import { pollUntil } from "../../shared/timing";
import { startLedger } from "../../services/ledger/start-ledger";
import { createLedgerPricer } from "../../shared/ledger/prices";
import { repriceOnce } from "../../services/ledger/repricer";
import { createChainProvider } from "../../shared/chain/chain-provider";
import type { RouterConfig } from "../../shared/config/types";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { CHAIN_ID, useLedgerSuite } from "./ledger-fixture";

const logger = createLogger({ level: "silent", service: "ledger" });

interface TxRow {
  hash: string;
  kind: string | null;
  gas_used: string;
  effective_gas_price: string;
  l1_fee_wei: string;
  cost_wei: string;
  reverted: boolean;
  cost_usd: string | null;
}

describe("ledger process: books real transactions from a real chain (anvil + NXTP contracts, redis, PostgreSQL)", () => {
  const suite = useLedgerSuite("ledger_book");
  const tm = () =>
    nxtpContractAt("TransactionManager", suite.s.chain.deployment.transactionManager, suite.routerWallet());
  const { enqueue, waitDone } = suite;

  async function gasRows(): Promise<TxRow[]> {
    return (await suite.pool.query<TxRow>("SELECT * FROM ledger_transactions ORDER BY block_number")).rows;
  }

  async function metricWei(): Promise<bigint> {
    const metric = await routerMetrics().gasSpentWei.get();
    return metric.values
      .filter((v) => v.labels.chain === String(CHAIN_ID))
      .reduce((sum, v) => sum + BigInt(v.value), 0n);
  }

  it("books each transaction once, to the wei of its receipt, with its events; a restart books nothing twice", async () => {
    // Real transactions by the router's signer: add liquidity, remove liquidity, and a removal that reverts.
    const added = await sendTx(tm(), "addLiquidity", [parseEther("1"), ZeroAddress], { value: parseEther("1") });
    const removed = await sendTx(tm(), "removeLiquidity", [
      parseEther("0.5"),
      ZeroAddress,
      suite.routerWallet().address,
    ]);
    const revertTx = await tm()
      .getFunction("removeLiquidity")
      .send(parseEther("1000000"), ZeroAddress, suite.routerWallet().address, { gasLimit: 200_000 });
    const reverted = await suite.s.chain.provider.waitForTransaction(revertTx.hash);
    expect(reverted?.status).toBe(0);

    let ledger = await startLedger({ config: suite.config, logger, env: {} });
    try {
      // Each named twice (the second joins the first job); the first two before the restart.
      await enqueue(added.hash, "add-liquidity");
      await enqueue(added.hash, "add-liquidity");
      await enqueue(removed.hash, "remove-liquidity");
      await waitDone(added.hash);
      await waitDone(removed.hash);
      await ledger.stop();
      // A restart, and a second naming after the first job was removed: nothing new is inserted.
      await suite.queue.remove(bookTransactionJobId(CHAIN_ID, added.hash));
      ledger = await startLedger({ config: suite.config, logger, env: {} });
      await enqueue(added.hash, "add-liquidity");
      await enqueue(reverted?.hash ?? "", "remove-liquidity");
      await enqueue(reverted?.hash ?? "", "remove-liquidity");
      await waitDone(added.hash);
      await waitDone(reverted?.hash ?? "");
      const again = await suite.queue.getJob(bookTransactionJobId(CHAIN_ID, added.hash));
      expect(again?.returnvalue).toEqual({ outcome: "known", transactionInserted: false, eventsInserted: 0 });
    } finally {
      await ledger.stop();
    }

    const rows = await gasRows();
    expect(rows.map((r) => r.hash)).toEqual([added.hash, removed.hash, reverted?.hash]);
    for (const row of rows) {
      const receipt = await suite.s.chain.provider.getTransactionReceipt(row.hash);
      if (!receipt) throw new Error("no receipt");
      expect(BigInt(row.gas_used)).toBe(receipt.gasUsed);
      expect(BigInt(row.effective_gas_price)).toBe(receipt.gasPrice);
      expect(BigInt(row.cost_wei)).toBe(receipt.gasUsed * receipt.gasPrice);
      expect(row.l1_fee_wei).toBe("0");
      expect(row.reverted).toBe(receipt.status === 0);
      // Priced on the chain's own oracle at the transaction's block: cost × 2000 USD.
      expect(row.cost_usd).not.toBeNull();
      expect(Number(row.cost_usd)).toBeCloseTo((Number(receipt.gasUsed * receipt.gasPrice) * 2000) / 1e18, 9);
    }
    expect(rows.map((r) => r.kind)).toEqual(["add-liquidity", "remove-liquidity", "remove-liquidity"]);
    expect(rows[2].reverted).toBe(true);

    const events = await suite.pool.query<{ event: string; amount: string; tx_hash: string }>(
      "SELECT event, amount, tx_hash FROM ledger_events ORDER BY block_number, log_index",
    );
    expect(events.rows).toEqual([
      { event: "liquidityAdded", amount: parseEther("1").toString(), tx_hash: added.hash },
      { event: "liquidityRemoved", amount: parseEther("0.5").toString(), tx_hash: removed.hash },
    ]);
    // The wei counter moved only for inserted rows: it equals the receipts' sum.
    const sum = rows.reduce((total, r) => total + BigInt(r.cost_wei), 0n);
    expect(await metricWei()).toBe(sum);
  });

  it("a transaction not mined yet is looked for again and booked once it is, not failed", async () => {
    await suite.s.chain.anvil.setAutomine(false);
    // Mined only after the job looked at least once.
    const pending = await tm().getFunction("addLiquidity").send(1n, ZeroAddress, { value: 1n, gasLimit: 200_000 });
    const hash = pending.hash;
    const ledger = await startLedger({ config: suite.config, logger, env: {} });
    try {
      await enqueue(hash);
      await pollUntil("a first look without a receipt", async () => {
        const job = await suite.queue.getJob(bookTransactionJobId(CHAIN_ID, hash));
        return typeof job?.progress === "number" && job.progress >= 1;
      });
      expect(await suite.queue.getJobState(bookTransactionJobId(CHAIN_ID, hash))).toBe("delayed");
      await suite.s.chain.anvil.mine(1);
      await suite.s.chain.anvil.setAutomine(true);
      await waitDone(hash);
    } finally {
      await ledger.stop();
      await suite.s.chain.anvil.setAutomine(true);
    }
    const row = (await gasRows()).find((r) => r.hash === hash);
    const receipt = await suite.s.chain.provider.getTransactionReceipt(hash);
    expect(row?.kind).toBe("add-liquidity"); // derived from its LiquidityAdded event: the producer gave none
    expect(BigInt(row?.cost_wei ?? -1)).toBe((receipt?.gasUsed ?? 0n) * (receipt?.gasPrice ?? 0n));
  });

  it("a row booked without a price stays NULL (never 0) and the repricing pass fills it once, at its own block", async () => {
    // Booked while the config named no oracle for the chain: no price could be read.
    const chainKey = String(CHAIN_ID);
    const unpricedConfig = {
      ...suite.config,
      chainConfig: {
        ...suite.config.chainConfig,
        [chainKey]: { ...suite.config.chainConfig[chainKey], priceOracleAddress: undefined },
      },
    } as RouterConfig;
    const sent = await sendTx(tm(), "addLiquidity", [2n, ZeroAddress], { value: 2n });
    const ledger = await startLedger({ config: unpricedConfig, logger, env: {} });
    try {
      await enqueue(sent.hash, "add-liquidity");
      await waitDone(sent.hash);
    } finally {
      await ledger.stop();
    }
    const before = (await gasRows()).find((r) => r.hash === sent.hash);
    expect(before?.cost_usd).toBeNull();
    const usdCounter = async () =>
      (await routerMetrics().gasSpentUsd.get()).values.reduce((sum, v) => sum + v.value, 0);
    const usdBefore = await usdCounter();

    // The oracle configured again: the pass prices the row at its own block, once.
    const provider = createChainProvider({ chainId: CHAIN_ID, urls: [suite.s.chain.anvil.url], logger });
    try {
      const pricer = createLedgerPricer({ config: suite.config, providerFor: () => provider, logger });
      expect(await repriceOnce(suite.pool, pricer)).toBe(0);
      await repriceOnce(suite.pool, pricer);
    } finally {
      provider.destroy();
    }
    const after = (await gasRows()).find((r) => r.hash === sent.hash);
    const expectedUsd = (Number(after?.cost_wei) * 2000) / 1e18;
    expect(Number(after?.cost_usd)).toBeCloseTo(expectedUsd, 9);
    expect(await usdCounter()).toBeCloseTo(usdBefore + expectedUsd, 9);
  });
});

import { Queue } from "bullmq";
import { parseEther, ZeroAddress } from "ethers";
import { Redis } from "ioredis";
import { createStatusReader } from "../../services/admin/status";
import { redisOptions } from "../../shared/queues/connection";
import { readLatestReconciliation } from "../../shared/ledger/reconcile-reads";
import { createLogger } from "../../shared/logging/create-logger";
import { routerMetrics } from "../../shared/metrics/router-metrics";
import { pollUntil } from "../../shared/timing";
import { reconcileChain, type ChainReconcileOutcome, type ReconcilerDeps } from "../../services/ledger/reconciler";
import { startLedger } from "../../services/ledger/start-ledger";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { AMOUNT } from "./poller-fixture";
import { RECEIVING, SENDING, useLedgerSwapSuite, type Named } from "./ledger-swap-fixture";

const logger = createLogger({ level: "silent", service: "ledger" });

function checked(outcome: ChainReconcileOutcome) {
  if (outcome.kind !== "checked") throw new Error(`expected a checked range, got ${outcome.kind}`);
  return outcome;
}

describe("reconciliation: the books against routerBalances and the signer's balance (anvil + NXTP, redis, PostgreSQL)", () => {
  // The process's own reconciliation timer is kept out of the way: the test runs each pass itself.
  const suite = useLedgerSwapSuite("ledger_reconcile", { reconcileIntervalMs: 86_400_000 });
  const deps = (withQueue = false): ReconcilerDeps => ({
    config: suite.config,
    pool: suite.pool,
    providerFor: suite.providerFor,
    signer: suite.signer,
    routerAddress: suite.signer,
    logger,
    ledgerQueue: withQueue ? suite.queue : undefined,
  });
  const token = (chainId: number) =>
    (chainId === SENDING ? suite.s.sending : suite.s.receiving).deployment.token.toLowerCase();

  async function book(txs: readonly Named[]): Promise<void> {
    for (const tx of txs) await suite.name(tx);
    for (const tx of txs) await suite.waitDone(tx);
  }

  it("finds no drift after real liquidity operations and a whole swap are booked; an unbooked addLiquidityFor drifts by exactly its amount and gas until booked", async () => {
    let ledger = await startLedger({ config: suite.config, logger, env: {} });
    try {
      // The baseline: where the books start being checked.
      expect((await reconcileChain(deps(), SENDING)).kind).toBe("baseline");
      expect((await reconcileChain(deps(), RECEIVING)).kind).toBe("baseline");

      const liquidity = await suite.liquidityOps();
      const swap = await suite.swap(5);
      await book([...liquidity, ...swap]);

      const sending = checked(await reconcileChain(deps(), SENDING));
      const receiving = checked(await reconcileChain(deps(), RECEIVING));
      for (const line of [...sending.lines, ...receiving.lines]) {
        expect({ ...line, drift: line.drift.toString() }).toMatchObject({ drift: "0", flagged: false });
      }
      // Not a vacuous 0 = 0: the claim credited the locked amount, the receiving prepare took amountReceived,
      // the native liquidity moved +2 − 0.5, the signer paid gas and value.
      const line = (o: typeof sending, subject: string, asset: string) =>
        o.lines.find((l) => l.subject === subject && l.assetId === asset);
      expect(line(sending, "router-balance", token(SENDING))?.actual).toBe(AMOUNT);
      expect(line(receiving, "router-balance", token(RECEIVING))?.actual).toBe(-((AMOUNT * 9995n) / 10000n));
      expect(line(receiving, "router-balance", ZeroAddress)?.actual).toBe(parseEther("1.5"));
      const receivingGas = (
        await suite.pool.query<{ sum: string }>(
          "SELECT sum(cost_wei) AS sum FROM ledger_transactions WHERE chain_id = $1",
          [RECEIVING],
        )
      ).rows[0].sum;
      expect(line(receiving, "signer-native", ZeroAddress)?.actual).toBe(-parseEther("1.5") - BigInt(receivingGas));
      expect(BigInt(receivingGas)).toBeGreaterThan(0n);

      // A deposit the ledger was never told about: the signer's addLiquidityFor, sent directly.
      const tm = nxtpContractAt(
        "TransactionManager",
        suite.s.receiving.deployment.transactionManager,
        suite.routerWallet(RECEIVING),
      );
      const stray = await sendTx(tm, "addLiquidityFor", [parseEther("0.25"), ZeroAddress, suite.signer], {
        value: parseEther("0.25"),
      });
      const gas = stray.gasUsed * stray.gasPrice;
      await ledger.stop();
      // The drift is reported, checked again from the same start, and nothing is booked by the check itself.
      for (let run = 0; run < 2; run++) {
        const drifted = checked(await reconcileChain(deps(), RECEIVING));
        expect(drifted.fromBlock).toBe(receiving.toBlock);
        expect(line(drifted, "router-balance", ZeroAddress)).toMatchObject({
          drift: parseEther("0.25"),
          flagged: true,
        });
        expect(line(drifted, "signer-native", ZeroAddress)).toMatchObject({
          drift: -(parseEther("0.25") + gas),
          flagged: true,
        });
        expect(line(drifted, "router-balance", token(RECEIVING))).toMatchObject({ drift: 0n, flagged: false });
      }
      const booked = await suite.pool.query("SELECT 1 FROM ledger_transactions WHERE hash = $1", [stray.hash]);
      expect(booked.rowCount).toBe(0);
      const gauge = (await routerMetrics().ledgerDrift.get()).values.find(
        (v) =>
          v.labels.chain === String(RECEIVING) &&
          v.labels.subject === "router-balance" &&
          v.labels.asset === ZeroAddress,
      );
      expect(gauge?.value).toBe(Number(parseEther("0.25")));
      const latest = await readLatestReconciliation(suite.pool);
      expect(latest.filter((r) => r.chainId === RECEIVING && r.flagged).map((r) => [r.subject, r.drift])).toEqual([
        ["router-balance", parseEther("0.25").toString()],
        ["signer-native", (-(parseEther("0.25") + gas)).toString()],
      ]);

      // GET /status's ledger section, as the admin builds it (read through shared/ledger, never services/ledger).
      const redis = new Redis(suite.s.redisUrl);
      const queues = new Map<number, Queue>();
      try {
        const status = await createStatusReader({
          config: suite.config,
          redis,
          queueFor: (chainId) => {
            const q = queues.get(chainId) ?? new Queue(`tx-${chainId}`, { connection: redisOptions(suite.s.redisUrl) });
            queues.set(chainId, q);
            return q;
          },
          readReconciliation: () => readLatestReconciliation(suite.pool),
        })();
        expect(status.ledger).toMatchObject({ drift: true });
        const rows = status.ledger && "reconciliation" in status.ledger ? status.ledger.reconciliation : [];
        expect(rows.find((r) => r.chainId === RECEIVING && r.flagged)?.drift).toBe(parseEther("0.25").toString());
        expect(rows.filter((r) => r.chainId === SENDING && r.flagged)).toEqual([]);
        const down = await createStatusReader({
          config: suite.config,
          redis,
          queueFor: (chainId) => queues.get(chainId) as Queue,
          readReconciliation: () => Promise.reject(new Error("connect ECONNREFUSED")),
        })();
        expect(down.ledger).toEqual({ unavailable: "the ledger database did not answer" });
      } finally {
        for (const q of queues.values()) await q.close();
        redis.disconnect();
      }

      // The self-heal: the check names the unbooked transaction it finds in the logs (source reconcile); the
      // ledger books it, and the next check of the same range is clean and moves on.
      const healing = checked(await reconcileChain(deps(true), RECEIVING));
      expect(healing.named).toEqual([stray.hash.toLowerCase()]);
      expect(healing.lines).toContainEqual(expect.objectContaining({ flagged: true }));
      ledger = await startLedger({ config: suite.config, logger, env: {} });
      await suite.waitDone({ chainId: RECEIVING, hash: stray.hash.toLowerCase() });
      const source = await suite.pool.query<{ source: string }>(
        "SELECT source FROM ledger_transactions WHERE hash = $1",
        [stray.hash.toLowerCase()],
      );
      expect(source.rows).toEqual([{ source: "reconcile" }]);
      const healed = checked(await reconcileChain(deps(), RECEIVING));
      expect(healed.fromBlock).toBe(receiving.toBlock);
      expect(healed.lines.filter((l) => l.flagged || l.drift !== 0n)).toEqual([]);
      expect((await reconcileChain(deps(), RECEIVING)).kind).toBe("nothing-new");
    } finally {
      await ledger.stop();
    }
  });

  it("the ledger process reconciles by itself every reconcileIntervalMs, from where the last clean range ended", async () => {
    const config = { ...suite.config, ledger: { ...suite.config.ledger!, reconcileIntervalMs: 1_000 } };
    const ledger = await startLedger({ config, logger, env: {} });
    try {
      // Its own baseline, or the cursor the test above left.
      const start = await pollUntil("a cursor of the receiving chain", async () => {
        const rows = await suite.pool.query<{ block: string }>(
          "SELECT block_number AS block FROM ledger_reconcile_cursors WHERE chain_id = $1",
          [RECEIVING],
        );
        return rows.rows[0]?.block;
      });
      const ops = await suite.liquidityOps();
      for (const tx of ops) await suite.name(tx);
      for (const tx of ops) await suite.waitDone(tx);
      // A run between the two bookings sees one in flight (drift, cursor kept); the next one from the same start agrees.
      const row = await pollUntil("a clean reconciliation run of the process over the new liquidity", async () => {
        const rows = await suite.pool.query<{ from_block: string; expected: string; drift: string; flagged: boolean }>(
          `SELECT from_block, expected, drift, flagged FROM ledger_reconciliations
            WHERE chain_id = $1 AND subject = 'router-balance' AND asset_id = $2 AND from_block >= $3 AND expected = $4 AND NOT flagged
            ORDER BY id DESC LIMIT 1`,
          [RECEIVING, ZeroAddress, start, parseEther("1.5").toString()],
        );
        return rows.rows[0];
      });
      expect(row).toMatchObject({ expected: parseEther("1.5").toString(), drift: "0", flagged: false });
    } finally {
      await ledger.stop();
    }
  });
});

import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createLogger } from "../../shared/logging/create-logger";
import { startLedger } from "../../services/ledger/start-ledger";
import { nxtpContractAt } from "../harness/deploy";
import { runRebuild } from "../../scripts/ledger";
import { RECEIVING, SENDING, useLedgerSwapSuite, type Named } from "./ledger-swap-fixture";

const logger = createLogger({ level: "silent", service: "ledger" });
const ROOT = join(__dirname, "../..");

describe("npm run ledger -- rebuild: the books derived again from the chain (anvil x2 + NXTP, redis, PostgreSQL)", () => {
  const suite = useLedgerSwapSuite("ledger_rebuild", { reconcileIntervalMs: 86_400_000 });
  let booked: Named[] = [];

  beforeAll(async () => {
    const ledger = await startLedger({ config: suite.config, logger, env: {} });
    try {
      // The stack's setup deposit (a funder's addLiquidityFor of the router's token liquidity) is named too, as
      // the poller names what it sees: without it, the rebuild finds a deposit the live books lack.
      const tm = nxtpContractAt(
        "TransactionManager",
        suite.s.receiving.deployment.transactionManager,
        suite.s.receiving.provider,
      );
      const setup = await tm.queryFilter(tm.filters.LiquidityAdded(), 0, "latest");
      expect(setup).toHaveLength(1);
      booked = [
        { chainId: RECEIVING, hash: setup[0].transactionHash.toLowerCase() },
        ...(await suite.liquidityOps()),
        ...(await suite.swap(6)),
        ...(await suite.swap(7)),
      ];
      for (const tx of booked) await suite.name(tx);
      for (const tx of booked) await suite.waitDone(tx);
    } finally {
      await ledger.stop();
    }
  }, 120_000);

  it("rebuilt from the first block into a fresh schema, the totals per (chain, asset, kind) equal the live books'", async () => {
    const out: string[] = [];
    const report = await runRebuild(
      { fromBlock: 0, chainIds: [SENDING, RECEIVING] },
      { config: suite.config, logger, out: (l) => out.push(l) },
    );
    expect(report.same).toBe(true);
    expect(report.target).toMatch(/^schema ledger_rebuild_\d{14} of the ledger database$/);
    const keys = report.comparison.map((c) => c.key);
    // Every kind the live books hold is there, not an empty comparison of nothing with nothing.
    expect(keys).toEqual(
      expect.arrayContaining([
        `${SENDING} ${suite.s.sending.deployment.token.toLowerCase()} prepared/sending`,
        `${SENDING} ${suite.s.sending.deployment.token.toLowerCase()} fulfilled/sending`,
        `${RECEIVING} ${suite.s.receiving.deployment.token.toLowerCase()} prepared/receiving`,
        `${RECEIVING} ${suite.s.receiving.deployment.token.toLowerCase()} fulfilled/receiving`,
        `${RECEIVING} 0x0000000000000000000000000000000000000000 liquidityAdded`,
        `${RECEIVING} 0x0000000000000000000000000000000000000000 liquidityRemoved`,
        `${SENDING} 0x0000000000000000000000000000000000000000 gas`,
        `${RECEIVING} 0x0000000000000000000000000000000000000000 gas`,
      ]),
    );
    const swaps = report.comparison.find((c) => c.key.endsWith("prepared/sending"));
    expect(swaps?.live?.rows).toBe(2);
    // The rebuilt rows are the live rows, to the wei, in their own schema; the live books are untouched.
    const schema = report.target.split(" ")[1];
    const diff = await suite.pool.query(
      `(SELECT chain_id, hash, cost_wei, gas_used FROM ledger_transactions
        EXCEPT SELECT chain_id, hash, cost_wei, gas_used FROM ${schema}.ledger_transactions)
       UNION ALL
       (SELECT chain_id, tx_hash, amount, log_index::numeric FROM ledger_events
        EXCEPT SELECT chain_id, tx_hash, amount, log_index::numeric FROM ${schema}.ledger_events)`,
    );
    expect(diff.rows).toEqual([]);
    const sources = await suite.pool.query(`SELECT DISTINCT source FROM ${schema}.ledger_transactions`);
    expect(sources.rows).toEqual([{ source: "rebuild" }]);
    const live = await suite.pool.query("SELECT count(*)::int AS n FROM ledger_transactions WHERE source = 'rebuild'");
    expect(live.rows[0].n).toBe(0);
  });

  it("the CLI exits 0 when the books agree, and 1 with the differing line when the live books lack a row the chain holds", async () => {
    const configFile = join(tmpdir(), `ledger-rebuild-${process.pid}.json`);
    writeFileSync(configFile, JSON.stringify(suite.configJson));
    const run = (args: string[]) =>
      spawnSync(process.execPath, [join(ROOT, "dist/scripts/ledger.js"), ...args], {
        env: { ...process.env, ROUTER_CONFIG_FILE: configFile },
        encoding: "utf8",
        timeout: 60_000,
      });
    const scratch = await (async () => {
      const url = new URL(suite.databaseUrl);
      const name = `${url.pathname.slice(1)}_scratch`;
      await suite.pool.query(`CREATE DATABASE ${name}`);
      url.pathname = `/${name}`;
      return url.toString();
    })();
    const agree = run(["rebuild", "--from-block", "0", "--chain", String(RECEIVING), "--database", scratch]);
    expect(agree.stderr + agree.stdout).not.toContain("Error");
    expect(agree.status).toBe(0);
    expect(agree.stdout).toContain("the rebuilt books agree with the live books");

    // The live books lose a row (deleted by hand): the rebuild finds it on chain, and the books differ.
    const gas = await suite.pool.query<{ hash: string }>(
      "SELECT hash FROM ledger_transactions WHERE chain_id = $1 AND kind = 'remove-liquidity'",
      [RECEIVING],
    );
    await suite.pool.query("DELETE FROM ledger_events WHERE tx_hash = $1", [gas.rows[0].hash]);
    const differ = run(["rebuild", "--from-block", "0", "--chain", String(RECEIVING), "--database", scratch]);
    expect(differ.status).toBe(1);
    expect(differ.stdout).toContain("the rebuilt books DIFFER from the live books");
    expect(differ.stdout).toMatch(
      new RegExp(`≠ +${RECEIVING} 0x0{40} liquidityRemoved +- +1 rows, 500000000000000000`),
    );

    const bad = run(["rebuild", "--to-block", "3"]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("--from-block is required");
  });
});

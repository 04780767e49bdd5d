import { Pool } from "pg";
import { createLogger } from "../../shared/logging/create-logger";
import { LEDGER_MIGRATIONS, migrateLedger, type Migration } from "../../shared/ledger/migrations";
import { usePostgres } from "../harness/postgres";

const logger = createLogger({ level: "silent", service: "test" });

describe("ledger schema migrations (real PostgreSQL)", () => {
  const pg = usePostgres();
  const pools: Pool[] = [];
  const newPool = async (name: string): Promise<Pool> => {
    const pool = new Pool({ connectionString: await pg.server.createDatabase(name), max: 4 });
    pool.on("error", () => undefined); // the cluster may stop before this file's afterAll ends the pool
    pools.push(pool);
    return pool;
  };
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
  });

  it("applies every migration once; a restart applies nothing and keeps the rows", async () => {
    const pool = await newPool("migrate_once");
    const first = await migrateLedger(pool, logger);
    expect(first.applied).toEqual(LEDGER_MIGRATIONS.map((m) => m.version));
    await pool.query(
      `INSERT INTO ledger_transactions (chain_id, hash, from_address, block_number, block_hash, block_time,
         gas_used, effective_gas_price, l1_fee_wei, cost_wei, reverted, source)
       VALUES (1337, '0x${"ab".repeat(32)}', '0x1', 1, '0x2', now(), 21000, 7, 0, 147000, false, 'submitter')`,
    );
    const second = await migrateLedger(pool, logger);
    expect(second).toEqual({ applied: [], version: first.version });
    const rows = await pool.query("SELECT version FROM schema_migrations ORDER BY version");
    expect(rows.rows.map((r: { version: number }) => r.version)).toEqual(LEDGER_MIGRATIONS.map((m) => m.version));
    expect((await pool.query("SELECT count(*)::int AS n FROM ledger_transactions")).rows[0].n).toBe(1);
  });

  it("the schema refuses a cost that is not gasUsed × effectiveGasPrice + l1Fee", async () => {
    const pool = await newPool("migrate_check");
    await migrateLedger(pool, logger);
    await expect(
      pool.query(
        `INSERT INTO ledger_transactions (chain_id, hash, from_address, block_number, block_hash, block_time,
           gas_used, effective_gas_price, l1_fee_wei, cost_wei, reverted, source)
         VALUES (1337, '0x${"cd".repeat(32)}', '0x1', 1, '0x2', now(), 21000, 7, 5, 147000, false, 'submitter')`,
      ),
    ).rejects.toThrow(/check constraint/);
  });

  it("two instances starting at once: the advisory lock lets one migrate, the other finds it done", async () => {
    const pool = await newPool("migrate_race");
    const results = await Promise.all([migrateLedger(pool, logger), migrateLedger(pool, logger)]);
    const applied = results.map((r) => r.applied.length).sort();
    expect(applied).toEqual([0, LEDGER_MIGRATIONS.length]);
  });

  it("a failing migration rolls back whole: no table, no schema_migrations row, and the error is thrown", async () => {
    const pool = await newPool("migrate_fail");
    const broken: Migration[] = [
      ...LEDGER_MIGRATIONS,
      { version: 999, name: "broken", sql: "CREATE TABLE half_done (x int); SELECT no_such_function();" },
    ];
    await expect(migrateLedger(pool, logger, broken)).rejects.toThrow(/no_such_function/);
    const tables = await pool.query("SELECT to_regclass('half_done') AS t");
    expect(tables.rows[0].t).toBeNull();
    const versions = await pool.query("SELECT max(version)::int AS v FROM schema_migrations");
    expect(versions.rows[0].v).toBe(LEDGER_MIGRATIONS[LEDGER_MIGRATIONS.length - 1].version);
  });
});

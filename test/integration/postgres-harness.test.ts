import { existsSync } from "node:fs";
import { Client } from "pg";
import { startPostgres } from "../harness/postgres";

describe("PostgreSQL test harness", () => {
  it("starts a cluster of its own on a free loopback port, answers queries, and leaves nothing after stop", async () => {
    const startedAt = Date.now();
    const server = await startPostgres();
    const startMs = Date.now() - startedAt;
    let dataDir: string | undefined;
    try {
      expect(server.port).not.toBe(5432);
      const url = await server.createDatabase("harness");
      const client = new Client({ connectionString: url });
      await client.connect();
      const row = await client.query<{ dir: string; fsync: string; db: string }>(
        "SELECT current_setting('data_directory') AS dir, current_setting('fsync') AS fsync, current_database() AS db",
      );
      await client.end();
      dataDir = row.rows[0].dir;
      expect(row.rows[0].fsync).toBe("off");
      expect(row.rows[0].db).toMatch(/^harness_/);
      expect(existsSync(dataDir)).toBe(true);
      // Figure for the commit message, not a timed assertion.
      process.stdout.write(`postgres harness start: ${startMs} ms\n`);
    } finally {
      await server.stop();
    }
    expect(dataDir !== undefined && existsSync(dataDir)).toBe(false);
    expect(dataDir).toBeDefined();
    const after = new Client({ connectionString: server.url, connectionTimeoutMillis: 1_000 });
    await expect(after.connect()).rejects.toThrow();
  });
});

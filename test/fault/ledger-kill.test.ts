import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pool } from "pg";
import { bookTransactionJobId } from "../../shared/queues/ledger-jobs";
import { pollUntil } from "../../shared/timing";
import { spawnRouterProcess, type ManagedProcess } from "../harness/child-process";
import { getFreePort } from "../harness/free-port";
import { useLedgerSwapSuite, type Named } from "../integration/ledger-swap-fixture";

/** The ledger's metrics port is metricsPort + its slot (130 × 32): a free port minus that offset. */
const LEDGER_PORT_OFFSET = 130 * 32;

/**
 * kill -9 of the ledger process mid-booking (dist/services/ledger/main.js as PM2 runs it): its database
 * transactions are open, blocked on a table lock the test holds, when it dies. After a restart, BullMQ hands
 * the stalled jobs to the new process and every transaction is booked exactly once (one DB transaction per job,
 * keys of the chain, ON CONFLICT DO NOTHING). Shipped defaults, so the stalled jobs come back after BullMQ's
 * 30 s lock.
 */
describe("fault: the ledger process SIGKILLed mid-booking", () => {
  const suite = useLedgerSwapSuite("ledger_kill");
  const procs: ManagedProcess[] = [];
  afterAll(async () => {
    for (const p of procs) await p.stop();
  });

  async function spawnLedger(configFile: string): Promise<ManagedProcess> {
    const proc = spawnRouterProcess({ name: `ledger-${procs.length}`, main: "ledger/main.js", configFile });
    procs.push(proc);
    await pollUntil(
      "the ledger process migrated and took the queue",
      async () => (await suite.queue.getWorkers()).length > 0 || proc.exitStatus() !== null,
      30_000,
    );
    if (proc.exitStatus() !== null) throw new Error(`ledger exited: ${proc.outputTail()}`);
    return proc;
  }

  it("books every transaction exactly once after a restart, none half-booked", async () => {
    const configFile = join(tmpdir(), `ledger-kill-${process.pid}.json`);
    writeFileSync(
      configFile,
      JSON.stringify({
        ...suite.configJson,
        logLevel: "info",
        metricsPort: (await getFreePort()) - LEDGER_PORT_OFFSET,
      }),
    );
    const txs: Named[] = [...(await suite.liquidityOps()), ...(await suite.swap(8))];

    // A first run creates the schema; then the test holds ledger_events so that a booking blocks half-way, its
    // transaction row written, its events waiting.
    let ledger = await spawnLedger(configFile);
    const blocker = new Pool({ connectionString: suite.databaseUrl, max: 1 });
    const lock = await blocker.connect();
    try {
      await pollUntil("the schema migrated", async () => {
        const r = await lock.query("SELECT to_regclass('ledger_events') AS t");
        return r.rows[0].t !== null;
      });
      await lock.query("BEGIN");
      await lock.query("LOCK TABLE ledger_events IN EXCLUSIVE MODE");
      for (const tx of txs) await suite.name(tx);
      await pollUntil(
        "bookings blocked inside their database transaction",
        async () => {
          const waiting = await suite.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE application_name = 'router-ledger' AND wait_event_type = 'Lock'`,
          );
          return waiting.rows[0].n >= 2;
        },
        30_000,
      );
      expect(await suite.queue.getActiveCount()).toBeGreaterThanOrEqual(2);
      process.kill(ledger.pid, "SIGKILL");
      await pollUntil("the ledger process died", async () => ledger.exitStatus()?.signal === "SIGKILL");
    } finally {
      await lock.query("ROLLBACK");
      lock.release();
      await blocker.end();
    }
    // What the killed run's transactions wrote is gone with them: nothing half-booked.
    await pollUntil("the killed sessions are gone", async () => {
      const left = await suite.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'router-ledger'",
      );
      return left.rows[0].n === 0;
    });
    const halfway = await suite.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger_transactions t
        WHERE NOT EXISTS (SELECT 1 FROM ledger_events e WHERE e.chain_id = t.chain_id AND e.tx_hash = t.hash)`,
    );
    expect(halfway.rows[0].n).toBe(0);

    // The restart: the stalled jobs come back to the new process and are booked, each once: within the lock's
    // expiry (30 s after its last renewal) and two stalled checks (LEDGER_STALLED_INTERVAL_MS), with room for a
    // loaded machine.
    ledger = await spawnLedger(configFile);
    const restartedAtMs = Date.now();
    for (const tx of txs) {
      await pollUntil(
        `the booking of ${tx.hash}`,
        async () => (await suite.queue.getJobState(bookTransactionJobId(tx.chainId, tx.hash))) === "completed",
        120_000,
      );
    }
    console.log(`ledger-kill: the killed run's bookings done ${Date.now() - restartedAtMs} ms after the restart`);
    // Named again after the restart: nothing new.
    for (const tx of txs) await suite.queue.remove(bookTransactionJobId(tx.chainId, tx.hash));
    for (const tx of txs) await suite.name(tx);
    for (const tx of txs) await suite.waitDone(tx);
    for (const tx of txs) {
      const job = await suite.queue.getJob(bookTransactionJobId(tx.chainId, tx.hash));
      expect(job?.returnvalue).toMatchObject({ outcome: "known", eventsInserted: 0 });
    }

    const rows = await suite.pool.query<{ chain_id: number; hash: string; n: number; events: number }>(
      `SELECT t.chain_id, t.hash, count(*)::int AS n,
              (SELECT count(*)::int FROM ledger_events e WHERE e.chain_id = t.chain_id AND e.tx_hash = t.hash) AS events
         FROM ledger_transactions t GROUP BY t.chain_id, t.hash`,
    );
    const paidBySigner = txs.filter((t) => t.kind !== undefined);
    expect(rows.rows.map((r) => r.hash).sort()).toEqual(paidBySigner.map((t) => t.hash).sort());
    expect(rows.rows.every((r) => r.n === 1 && r.events === 1)).toBe(true);
    // Every transaction's events once: 2 liquidity events and the swap's 4.
    const events = await suite.pool.query<{ n: number; distinct: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT (chain_id, tx_hash, log_index))::int AS distinct FROM ledger_events",
    );
    expect(events.rows[0]).toEqual({ n: 6, distinct: 6 });
    // Each gas row equals its receipt.
    for (const tx of paidBySigner) {
      const provider = tx.chainId === suite.s.sending.chainId ? suite.s.sending.provider : suite.s.receiving.provider;
      const receipt = await provider.getTransactionReceipt(tx.hash);
      const row = await suite.pool.query<{ cost_wei: string }>(
        "SELECT cost_wei FROM ledger_transactions WHERE hash = $1",
        [tx.hash],
      );
      expect(BigInt(row.rows[0].cost_wei)).toBe((receipt?.gasUsed ?? 0n) * (receipt?.gasPrice ?? 0n));
    }
  }, 240_000);
});

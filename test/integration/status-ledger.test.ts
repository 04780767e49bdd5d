import { execFile } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Wallet } from "ethers";
import { startAdmin } from "../../services/admin/start-admin";
import { loadConfig } from "../../shared/config";
import { createLedgerPool, type LedgerPool } from "../../shared/ledger/database";
import { bookRows, type EventRow, type TransactionRow } from "../../shared/ledger/ledger-writer";
import { migrateLedger } from "../../shared/ledger/migrations";
import { getFreePort } from "../harness/free-port";
import { captureLogs } from "../harness/logs";
import { usePostgres } from "../harness/postgres";
import { uniquePrefix } from "../harness/prefix";
import { startRedis, type RedisServer } from "../harness/redis";
import { MNEMONIC, validConfig } from "../unit/config-fixtures";
import { DAI, USDC, signerTransactionRow, swapEventRow } from "./ledger-rows";

/**
 * `npm run status` (dist/scripts/status.js, as an operator runs it) against the real admin process (startAdmin)
 * on real Redis and a PostgreSQL cluster of the file's own, with books written by the ledger's own writer: the
 * LEDGER section shows each chain and asset's figures to the wei (amounts past 2^53, where a float is no longer
 * exact), each chain's latest reconciliation, and a line instead when the books are off or the database is gone,
 * with the rest of the status printed and exit 0 either way. No chain answers: status needs none.
 */
const ROOT = resolve(__dirname, "../..");
const SIGNER = Wallet.fromPhrase(MNEMONIC).address.toLowerCase();
const NATIVE = "0x0000000000000000000000000000000000000000";
const TIME = 1_764_000_000;

/** 100 USDC (6 decimals) claimed on 1337; 99.900000000000000001 DAI (18) paid out on 1338, relayed by the router. */
const CLAIMED = 100_000_000n;
const PAID_OUT = 99_900_000_000_000_000_001n;
const RELAYER_FEE = 123_456_789_012_345_678_901n;
/** The fee, in DAI base units: the claim normalised to 18 decimals minus what was paid out (above 2^53). */
const FEE = CLAIMED * 10n ** 12n - PAID_OUT;

function gasRow(chainId: number, n: number, gasUsed: bigint, price: bigint, l1: bigint): TransactionRow {
  return signerTransactionRow({
    chainId,
    hash: `0x${String(n).padStart(2, "0").repeat(32)}`,
    kind: chainId === 1337 ? "fulfill" : "prepare",
    from: SIGNER,
    blockNumber: 10 + n,
    blockHash: `0x${"bb".repeat(31)}${String(n).padStart(2, "0")}`,
    blockTime: TIME + n,
    gasUsed,
    effectiveGasPrice: price,
    l1FeeWei: l1,
  });
}

function swapEvent(side: "sending" | "receiving", event: "prepared" | "fulfilled", n: number): EventRow {
  const sending = side === "sending";
  return swapEventRow({
    side,
    event,
    n,
    router: SIGNER,
    blockTime: TIME + n,
    expiry: TIME + 100_000,
    amount: String(sending ? CLAIMED : PAID_OUT),
    relayerFee: sending ? "0" : String(RELAYER_FEE),
    usd: null,
  });
}

/** The command as an operator runs it; asynchronous, so the admin in this process keeps answering. */
function runStatus(configFile: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(ROOT, "dist/scripts/status.js")],
      { env: { ...process.env, ROUTER_CONFIG_FILE: configFile, ADMIN_URL: "" }, timeout: 60_000 },
      (err, stdout, stderr) => done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

/** The lines of a section, from its title to the next blank line. */
function section(stdout: string, title: string): string[] {
  const lines = stdout.split("\n");
  const start = lines.findIndex((l) => l.startsWith(title));
  if (start < 0) return [];
  const end = lines.indexOf("", start);
  return lines.slice(start, end < 0 ? undefined : end);
}

const cells = (line: string): string[] => line.split(/\s{2,}/).map((c) => c.trim());
const rowOf = (lines: string[], chain: string, asset: string): string[] | undefined =>
  lines.map(cells).find((c) => c[0] === chain && c[1] === asset);

describe("npm run status: the LEDGER section (real admin, Redis and PostgreSQL)", () => {
  const pg = usePostgres();
  let redis: RedisServer;
  let writer: LedgerPool;
  const admins: Array<{ stop(): Promise<void> }> = [];
  const files: string[] = [];
  const cost1337 = 123_457n * 987_654_321_123n + 77n;
  const cost1338 = 2_000_003n * 5_000_000_017n + 0n;

  /** A running admin for the config (with or without the books) and the config file the command reads. */
  const serve = async (ledger: { databaseUrl: string } | undefined): Promise<string> => {
    const raw = {
      ...validConfig(),
      host: "127.0.0.1",
      port: await getFreePort(),
      redisUrl: redis.url,
      redisPrefix: uniquePrefix(),
      logLevel: "silent",
      swapPools: [
        {
          name: "USD",
          assets: [
            { chainId: 1337, assetId: USDC },
            { chainId: 1338, assetId: DAI },
          ],
        },
      ],
      ...(ledger ? { ledger } : {}),
    };
    const { config } = loadConfig(raw, {});
    admins.push(await startAdmin({ config, logger: captureLogs("admin").logger, env: {} }));
    const file = join(tmpdir(), `status-ledger-${process.pid}-${files.length}.json`);
    writeFileSync(file, JSON.stringify(raw));
    files.push(file);
    return file;
  };

  beforeAll(async () => {
    redis = await startRedis();
  }, 30_000);

  afterAll(async () => {
    await Promise.allSettled(admins.map((a) => a.stop()));
    await writer?.end().catch(() => undefined);
    await redis?.stop();
    for (const f of files) rmSync(f, { force: true });
  });

  it("per chain and asset: fees, relayer fees, gas and net to the wei, and the reconciliation; then the database gone", async () => {
    const databaseUrl = await pg.server.createDatabase("status_ledger");
    const { config } = loadConfig({ ...validConfig(), ledger: { databaseUrl } }, {});
    if (!config.ledger) throw new Error("no ledger config");
    writer = createLedgerPool({
      ledger: config.ledger,
      logger: captureLogs("ledger").logger,
      mode: "writer",
      service: "ledger",
    });
    writer.on("error", () => undefined); // the cluster is stopped below while the pool is open
    await migrateLedger(writer, captureLogs("ledger").logger);
    await bookRows(writer, { events: [swapEvent("sending", "prepared", 1)] });
    await bookRows(writer, {
      transaction: gasRow(1338, 2, 2_000_003n, 5_000_000_017n, 0n),
      events: [swapEvent("receiving", "prepared", 2)],
    });
    await bookRows(writer, { events: [swapEvent("receiving", "fulfilled", 3)] });
    await bookRows(writer, {
      transaction: gasRow(1337, 4, 123_457n, 987_654_321_123n, 77n),
      events: [swapEvent("sending", "fulfilled", 4)],
    });
    // The reconciler's latest run per chain, its lines in one transaction as it writes them (one checked_at):
    // 1337 clean on both lines, 1338 with DAI's routerBalances 5 short.
    type Line = [subject: string, asset: string, expected: bigint, actual: bigint];
    const run = async (chainId: number, lines: Line[]) => {
      const client = await writer.connect();
      try {
        await client.query("BEGIN");
        for (const [subject, asset, expected, actual] of lines) {
          await client.query(
            `INSERT INTO ledger_reconciliations
               (chain_id, from_block, to_block, subject, asset_id, expected, actual, drift, gas_wei, flagged)
             VALUES ($1, 10, 20, $2, $3, $4, $5, $6, $7, $8)`,
            [
              chainId,
              subject,
              asset,
              String(expected),
              String(actual),
              String(actual - expected),
              subject === "signer-native" ? String(-expected) : null,
              actual !== expected,
            ],
          );
        }
        await client.query("COMMIT");
      } finally {
        client.release();
      }
    };
    await run(1337, [
      ["router-balance", USDC, CLAIMED, CLAIMED],
      ["signer-native", NATIVE, -cost1337, -cost1337],
    ]);
    await run(1338, [
      ["router-balance", DAI, -PAID_OUT, -PAID_OUT - 5n],
      ["signer-native", NATIVE, -cost1338, -cost1338],
    ]);

    const on = await serve({ databaseUrl });
    const status = await runStatus(on);
    expect(status.stderr).toBe("");
    expect(status.code).toBe(0);
    const ledger = section(status.stdout, "LEDGER");
    expect(ledger[0]).toMatch(/^LEDGER \(all time to .*; exact base units/);
    expect(cells(ledger[1])).toEqual(["chain", "asset", "fee earned", "relayer fee", "gas spent", "net", "reconciled"]);
    // Each figure exactly the rows' sum: BigInt here, NUMERIC in the books; a float would round them.
    expect(FEE).toBeGreaterThan(2n ** 53n);
    expect(cost1337).toBeGreaterThan(2n ** 53n);
    expect(rowOf(ledger, "1337", "native")).toEqual([
      "1337",
      "native",
      "0",
      "0",
      String(cost1337),
      String(-cost1337),
      "clean",
    ]);
    expect(rowOf(ledger, "1337", "USD")).toEqual(["1337", "USD", "0", "0", "0", "0", "clean"]);
    expect(rowOf(ledger, "1338", "native")).toEqual([
      "1338",
      "native",
      "0",
      "0",
      String(cost1338),
      String(-cost1338),
      "clean",
    ]);
    expect(rowOf(ledger, "1338", "USD")).toEqual([
      "1338",
      "USD",
      String(FEE),
      String(RELAYER_FEE),
      "0",
      String(FEE + RELAYER_FEE),
      "DRIFT",
      "! router-balance drift -5 over blocks 10-20",
    ]);
    expect(ledger[ledger.length - 1]).toMatch(
      /^! reconciliation: 1 not run yet; 1337 clean to block 20 at \S+Z; 1338 DRIFT to block 20 at \S+Z$/,
    );
    console.log(`status-ledger: the LEDGER section\n${ledger.join("\n")}`);

    // Without a ledger section: one line, the rest as before.
    const off = await runStatus(await serve(undefined));
    expect(off.code).toBe(0);
    expect(section(off.stdout, "LEDGER")).toEqual([
      "LEDGER",
      "off: the config has no `ledger` section (docs/accounting.md)",
    ]);
    expect(section(off.stdout, "CHAINS").length).toBeGreaterThan(1);

    // The database gone: the admin answers 503 for the books, the status still prints the rest, exit 0.
    await pg.server.stop();
    const gone = await runStatus(on);
    expect(gone.code).toBe(0);
    expect(section(gone.stdout, "CHAINS").length).toBeGreaterThan(1);
    expect(section(gone.stdout, "PROCESSES")[0]).toBe("PROCESSES");
    expect(section(gone.stdout, "LEDGER")).toEqual([
      "LEDGER",
      "! unavailable: GET /pnl answered 503 ledger_unavailable: the ledger database could not be read",
    ]);
    console.log(`status-ledger: database stopped\n${section(gone.stdout, "LEDGER").join("\n")}`);
  }, 120_000);
});

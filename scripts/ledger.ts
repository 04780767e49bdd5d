import { Redis } from "ioredis";
import { createChainProvider, type ChainProvider } from "../shared/chain/chain-provider";
import type { RouterConfig } from "../shared/config/types";
import { errorMessage } from "../shared/errors";
import { createDecimalsLookup } from "../shared/ledger/chain-reads";
import { createLedgerPool, type LedgerPool } from "../shared/ledger/database";
import { migrateLedger } from "../shared/ledger/migrations";
import { createLedgerPricer } from "../shared/ledger/prices";
import { ledgerTotals, rebuildChain, type RebuildChainRange } from "../shared/ledger/rebuild";
import { createLogger, type Logger } from "../shared/logging/create-logger";
import { compareTotals, type LedgerTotal, type TotalsComparison } from "../shared/protocol/ledger-totals";
import { redisOptions } from "../shared/queues/connection";
import { createSigner } from "../shared/signer/create-signer";
import { loadCliConfig } from "./cli-config";

/**
 * `npm run ledger -- rebuild --from-block N [--to-block M] [--chain ID[,ID…]] [--database URL]` (docs/accounting.md#rebuild):
 * the books derived again from the chain into a fresh schema of the ledger database (or the database named by
 * --database), through the ledger's own booking code, then their totals per (chain, asset, kind) side by side
 * with the live books' over the same blocks. Exit 0 when every line agrees, 1 when one differs or on bad usage.
 * It never writes the live books.
 */

const USAGE = "usage: npm run ledger -- rebuild --from-block N [--to-block M] [--chain ID[,ID…]] [--database URL]";

export class LedgerCliError extends Error {}

export interface RebuildOptions {
  readonly fromBlock: number;
  readonly toBlock?: number;
  /** The chains to rebuild (default: every configured chain). */
  readonly chainIds?: readonly number[];
  /** A scratch database (postgres:// URL); absent: a fresh schema `ledger_rebuild_<time>` in the live database. */
  readonly database?: string;
}

export function parseRebuildArgs(args: readonly string[]): RebuildOptions {
  const [command, ...rest] = args;
  if (command !== "rebuild") throw new LedgerCliError(USAGE);
  const flags = new Map<string, string>();
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i];
    const value = rest[i + 1];
    if (!flag.startsWith("--") || value === undefined) throw new LedgerCliError(`${flag}: needs a value\n${USAGE}`);
    flags.set(flag.slice(2), value);
  }
  for (const key of flags.keys()) {
    if (!["from-block", "to-block", "chain", "database"].includes(key)) {
      throw new LedgerCliError(`--${key}: unknown flag\n${USAGE}`);
    }
  }
  const block = (key: string): number | undefined => {
    const value = flags.get(key);
    if (value === undefined) return undefined;
    if (!/^\d+$/.test(value)) throw new LedgerCliError(`--${key}: must be a block number, got ${value}`);
    return Number(value);
  };
  const fromBlock = block("from-block");
  if (fromBlock === undefined) throw new LedgerCliError(`--from-block is required\n${USAGE}`);
  const database = flags.get("database");
  if (database !== undefined && !/^postgres(ql)?:\/\//.test(database)) {
    throw new LedgerCliError("--database: must be a postgres:// or postgresql:// URL");
  }
  const chains = flags.get("chain");
  if (chains !== undefined && !/^\d+(,\d+)*$/.test(chains)) {
    throw new LedgerCliError(`--chain: must be chain ids separated by commas, got ${chains}`);
  }
  return { fromBlock, toBlock: block("to-block"), chainIds: chains?.split(",").map(Number), database };
}

export interface RebuildReport {
  readonly target: string;
  readonly ranges: readonly RebuildChainRange[];
  readonly comparison: readonly TotalsComparison[];
  readonly same: boolean;
}

/**
 * 1. The target: a fresh schema (or the scratch database), migrated.
 * 2. Per chain: the range (to the confirmed head unless --to-block), the router's transactions found (logs and
 *    Redis send records) and booked there, source rebuild.
 * 3. Totals of both books over the same ranges, compared line by line.
 */
export async function runRebuild(
  opts: RebuildOptions,
  deps: { config: RouterConfig; logger: Logger; out: (line: string) => void; redis?: Redis },
): Promise<RebuildReport> {
  const { config, logger } = deps;
  const ledger = config.ledger;
  if (ledger === undefined)
    throw new LedgerCliError("the config has no `ledger` section: there are no books to rebuild");
  for (const id of opts.chainIds ?? []) {
    if (config.chainConfig[String(id)] === undefined) throw new LedgerCliError(`--chain ${id}: not in chainConfig`);
  }
  const chains = Object.values(config.chainConfig).filter(
    (c) => opts.chainIds === undefined || opts.chainIds.includes(c.chainId),
  );

  const live = createLedgerPool({ ledger, logger, mode: "reader", service: "ledger-rebuild" });
  const providers = new Map<number, ChainProvider>();
  const providerFor = (chainId: number): ChainProvider => {
    let p = providers.get(chainId);
    if (!p) {
      p = createChainProvider({ chainId, urls: config.chainConfig[String(chainId)].providers, logger });
      providers.set(chainId, p);
    }
    return p;
  };
  let target: LedgerPool | undefined;
  try {
    // 1. The target.
    const schema = `ledger_rebuild_${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}`;
    if (opts.database === undefined) {
      const admin = createLedgerPool({ ledger, logger, mode: "writer", service: "ledger-rebuild" });
      try {
        await admin.query(`CREATE SCHEMA ${schema}`);
      } finally {
        await admin.end();
      }
    }
    target = createLedgerPool({
      ledger: opts.database === undefined ? ledger : { ...ledger, databaseUrl: opts.database },
      logger,
      mode: "writer",
      service: "ledger-rebuild",
      schema: opts.database === undefined ? schema : undefined,
    });
    await migrateLedger(target, logger);
    const where = opts.database === undefined ? `schema ${schema} of the ledger database` : "the --database";
    deps.out(`rebuilding into ${where}`);

    // 2. Per chain.
    const signer = await createSigner({
      mnemonic: config.mnemonic,
      remoteSignerUrl: config.remoteSignerUrl,
    }).getAddress();
    const bookDeps = {
      config,
      pool: target,
      providerFor,
      decimals: createDecimalsLookup(providerFor),
      pricer: createLedgerPricer({ config, providerFor, logger }),
      signer,
      routerAddress: config.routerContractAddress ?? signer,
      logger,
      redis: deps.redis,
    };
    const ranges: RebuildChainRange[] = [];
    let unbooked = 0;
    for (const chain of chains) {
      const head = await providerFor(chain.chainId).getBlockNumber();
      const confirmed = head - Math.max(1, chain.confirmations) + 1;
      const range = {
        chainId: chain.chainId,
        fromBlock: opts.fromBlock,
        toBlock: Math.min(opts.toBlock ?? confirmed, confirmed),
      };
      if (range.toBlock < range.fromBlock) continue;
      const result = await rebuildChain(bookDeps, range);
      ranges.push(range);
      unbooked += result.notBooked.length;
      deps.out(
        `chain ${chain.chainId} blocks ${range.fromBlock}..${range.toBlock}: ${result.found.logs} transactions from logs, ` +
          `${result.found.sendRecords} more from send records, ${result.booked} booked` +
          (result.notBooked.length > 0 ? `, NOT booked (no confirmed receipt): ${result.notBooked.join(", ")}` : ""),
      );
    }

    // 3. Both books' totals.
    const totals = async (pool: LedgerPool): Promise<LedgerTotal[]> =>
      (await Promise.all(ranges.map((r) => ledgerTotals(pool, r)))).flat();
    const comparison = compareTotals(await totals(live), await totals(target));
    deps.out(formatComparison(comparison));
    // A transaction found and not booked leaves the rebuild incomplete: never reported as agreeing.
    const same = unbooked === 0 && comparison.every((c) => c.same);
    deps.out(same ? "the rebuilt books agree with the live books" : "the rebuilt books DIFFER from the live books");
    return { target: where, ranges, comparison, same };
  } finally {
    for (const p of providers.values()) p.destroy();
    await target?.end();
    await live.end();
  }
}

function formatComparison(rows: readonly TotalsComparison[]): string {
  const cell = (t?: LedgerTotal) => (t === undefined ? "-" : `${t.rows} rows, ${t.sum}`);
  const lines = rows.map((r) => [r.same ? " " : "≠", r.key, cell(r.live), cell(r.rebuilt)]);
  const header = [" ", "chain asset kind", "live", "rebuilt"];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  return [header, ...lines]
    .map((l) =>
      l
        .map((c, i) => c.padEnd(widths[i]))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  let opts: RebuildOptions;
  try {
    opts = parseRebuildArgs(args);
  } catch (err) {
    process.stderr.write(`${errorMessage(err)}\n`);
    return 1;
  }
  const config = loadCliConfig("ledger");
  if (config === undefined) return 1;
  const logger = createLogger({ level: "warn", service: "ledger-rebuild" });
  const redis = new Redis({
    ...redisOptions(config.redis),
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    lazyConnect: true,
  });
  redis.on("error", () => undefined);
  // Redis holds only the send records: without it the rebuild still reads the chain's logs.
  const reachable = await redis.connect().then(
    () => true,
    () => false,
  );
  if (!reachable)
    process.stderr.write("ledger: Redis unreachable: rebuilding from the chain's logs only (no send records)\n");
  try {
    const report = await runRebuild(opts, {
      config,
      logger,
      out: (line) => process.stdout.write(`${line}\n`),
      redis: reachable ? redis : undefined,
    });
    return report.same ? 0 : 1;
  } catch (err) {
    process.stderr.write(`ledger: ${errorMessage(err)}\n`);
    return 1;
  } finally {
    redis.disconnect();
  }
}

if (require.main === module) {
  void main().then((code) => {
    process.exitCode = code;
  });
}

import type { ChainProvider } from "../../shared/chain/chain-provider";
import { readRouterBalanceAt } from "../../shared/chain/router-balances";
import { scanRouterEvents } from "../../shared/chain/router-logs";
import { undecodableLogFields } from "../../shared/chain/tm-log-decoder";
import type { RouterConfig } from "../../shared/config/types";
import { errorMessage } from "../../shared/errors";
import type { LedgerPool } from "../../shared/ledger/database";
import {
  readBookedAssets,
  readRangeRows,
  readReconcileCursor,
  type ReconcileCursor,
} from "../../shared/ledger/reconcile-reads";
import type { Logger } from "../../shared/logging/create-logger";
import { routerMetrics } from "../../shared/metrics/router-metrics";
import {
  ledgerExpectation,
  reconcileLines,
  type ChainSnapshot,
  type ReconcileLine,
} from "../../shared/protocol/reconcile";
import { nameTransaction, type BookTransactionJobData } from "../../shared/queues/ledger-jobs";

export interface ReconcilerDeps {
  readonly config: RouterConfig;
  readonly pool: LedgerPool;
  readonly providerFor: (chainId: number) => ChainProvider;
  readonly signer: string;
  /** The address the TransactionManager credits (Router contract or signer). */
  readonly routerAddress: string;
  readonly logger: Logger;
  /** Where the self-heal names an unbooked transaction of ours (the ledger queue); absent: report only. */
  readonly ledgerQueue?: { add: Parameters<typeof nameTransaction>[0]["add"] };
}

export type ChainReconcileOutcome =
  | { readonly kind: "baseline"; readonly block: number }
  | { readonly kind: "nothing-new"; readonly block: number }
  | {
      readonly kind: "checked";
      readonly fromBlock: number;
      readonly toBlock: number;
      readonly lines: readonly ReconcileLine[];
      /** Transactions of ours found in the range's logs and not booked: named to the ledger (source reconcile). */
      readonly named: readonly string[];
    };

/**
 * One chain's reconciliation (docs/accounting.md#reconciliation). It reports; it never books anything itself.
 *  1. The range's end: the confirmed head (head − confirmations + 1), so both ends are blocks a lagging or
 *     re-orging node cannot change; every read names that block.
 *  2. The range's start: the cursor (the chain's state stored after the last clean range). No cursor yet: the
 *     state at the end is the baseline, nothing is compared.
 *  3. The chain's state at the end: routerBalances of every asset of the pools, of the books and of the cursor,
 *     and the signer's native balance.
 *  4. The books' expectation over (start, end] and the lines: actual − expected per asset and for the signer.
 *  5. The lines stored in one transaction; the cursor moves to the end only when nothing drifted, so a drift is
 *     checked again, from the same start, on every run until the books explain it.
 *  6. The gauge per line, and on drift the self-heal: transactions of ours in the range's TransactionManager
 *     logs that the books do not hold are named to the ledger (source reconcile); the drift stays reported
 *     until a later run finds them booked.
 */
export async function reconcileChain(deps: ReconcilerDeps, chainId: number): Promise<ChainReconcileOutcome> {
  const chain = deps.config.chainConfig[String(chainId)];
  if (chain === undefined) throw new RangeError(`chain ${chainId} is not in chainConfig`);
  const provider = deps.providerFor(chainId);

  // 1. The confirmed end.
  const head = await provider.getBlockNumber();
  const toBlock = head - Math.max(1, chain.confirmations) + 1;

  // 2. The start.
  const cursor = await readReconcileCursor(deps.pool, chainId);
  const assets = await assetsOf(deps, chainId, cursor);
  if (cursor === undefined) {
    const baseline = await snapshotAt(deps, chainId, assets, toBlock);
    await storeCursor(deps.pool, chainId, baseline);
    deps.logger.info("ledger: reconciliation baseline taken", { at: "ledger.reconcile", chainId, block: toBlock });
    return { kind: "baseline", block: toBlock };
  }
  if (toBlock <= cursor.blockNumber) return { kind: "nothing-new", block: cursor.blockNumber };
  const start = await startSnapshot(deps, chainId, assets, cursor);

  // 3. The chain at the end.
  const end = await snapshotAt(deps, chainId, assets, toBlock);

  // 4. The books' expectation and the lines.
  const rows = await readRangeRows(deps.pool, {
    chainId,
    fromBlock: cursor.blockNumber,
    toBlock,
    signer: deps.signer,
  });
  const expected = ledgerExpectation({ ...rows, signer: deps.signer });
  const lines = reconcileLines({ start, end, expected });
  const drifted = lines.some((l) => l.flagged);

  // 5. Stored; the cursor moves only when clean.
  await storeResult(deps.pool, {
    chainId,
    fromBlock: cursor.blockNumber,
    toBlock,
    lines,
    gasWei: expected.gasWei,
    nextCursor: drifted ? undefined : end,
  });

  // 6. Gauge, and the self-heal on drift.
  const gauge = routerMetrics().ledgerDrift;
  for (const line of lines) {
    gauge.set({ chain: String(chainId), asset: line.assetId, subject: line.subject }, Number(line.drift));
  }
  const named = drifted ? await nameUnbooked(deps, chainId, cursor.blockNumber + 1, toBlock) : [];
  if (drifted) {
    deps.logger.warn("ledger: the books drift from the chain", {
      at: "ledger.reconcile",
      chainId,
      fromBlock: cursor.blockNumber,
      toBlock,
      drift: lines
        .filter((l) => l.flagged)
        .map((l) => ({ subject: l.subject, assetId: l.assetId, drift: l.drift.toString() })),
      namedUnbooked: named,
    });
  }
  return { kind: "checked", fromBlock: cursor.blockNumber, toBlock, lines, named };
}

/** The assets to read on a chain: the pools' on it, the books', the cursor's (lower case). */
async function assetsOf(deps: ReconcilerDeps, chainId: number, cursor?: ReconcileCursor): Promise<string[]> {
  const pools = deps.config.swapPools.flatMap((p) => p.assets.filter((a) => a.chainId === chainId));
  return [
    ...new Set([
      ...pools.map((a) => a.assetId.toLowerCase()),
      ...(await readBookedAssets(deps.pool, chainId)),
      ...Object.keys(cursor?.routerBalances ?? {}),
    ]),
  ].sort();
}

async function snapshotAt(
  deps: ReconcilerDeps,
  chainId: number,
  assets: readonly string[],
  block: number,
): Promise<ChainSnapshot> {
  const provider = deps.providerFor(chainId);
  const tm = deps.config.chainConfig[String(chainId)].transactionManagerAddress;
  const balances = await Promise.all(
    assets.map(async (asset) => [asset, await readRouterBalanceAt(provider, tm, deps.routerAddress, asset, block)]),
  );
  return {
    blockNumber: block,
    routerBalances: new Map(balances as Array<[string, bigint]>),
    signerBalance: await provider.getBalance(deps.signer, block),
  };
}

/** The cursor's stored state; an asset it does not hold (new in the pools or the books) read at its block. */
async function startSnapshot(
  deps: ReconcilerDeps,
  chainId: number,
  assets: readonly string[],
  cursor: ReconcileCursor,
): Promise<ChainSnapshot> {
  const missing = assets.filter((a) => cursor.routerBalances[a] === undefined);
  const read = missing.length > 0 ? await snapshotAt(deps, chainId, missing, cursor.blockNumber) : undefined;
  const balances = new Map<string, bigint>(Object.entries(cursor.routerBalances).map(([a, v]) => [a, BigInt(v)]));
  for (const [asset, value] of read?.routerBalances ?? []) balances.set(asset, value);
  return { blockNumber: cursor.blockNumber, routerBalances: balances, signerBalance: BigInt(cursor.signerBalance) };
}

function cursorValues(chainId: number, snapshot: ChainSnapshot): unknown[] {
  return [
    chainId,
    snapshot.blockNumber,
    JSON.stringify(Object.fromEntries([...snapshot.routerBalances].map(([a, v]) => [a, v.toString()]))),
    snapshot.signerBalance.toString(),
  ];
}

const UPSERT_CURSOR = `INSERT INTO ledger_reconcile_cursors (chain_id, block_number, router_balances, signer_balance)
  VALUES ($1, $2, $3, $4)
  ON CONFLICT (chain_id) DO UPDATE SET block_number = EXCLUDED.block_number,
    router_balances = EXCLUDED.router_balances, signer_balance = EXCLUDED.signer_balance, updated_at = now()`;

async function storeCursor(pool: LedgerPool, chainId: number, snapshot: ChainSnapshot): Promise<void> {
  await pool.query(UPSERT_CURSOR, cursorValues(chainId, snapshot));
}

async function storeResult(
  pool: LedgerPool,
  r: {
    chainId: number;
    fromBlock: number;
    toBlock: number;
    lines: readonly ReconcileLine[];
    gasWei: bigint;
    nextCursor?: ChainSnapshot;
  },
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    for (const line of r.lines) {
      await client.query(
        `INSERT INTO ledger_reconciliations
           (chain_id, from_block, to_block, subject, asset_id, expected, actual, drift, gas_wei, flagged)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          r.chainId,
          r.fromBlock,
          r.toBlock,
          line.subject,
          line.assetId,
          line.expected.toString(),
          line.actual.toString(),
          line.drift.toString(),
          line.subject === "signer-native" ? r.gasWei.toString() : null,
          line.flagged,
        ],
      );
    }
    if (r.nextCursor) await client.query(UPSERT_CURSOR, cursorValues(r.chainId, r.nextCursor));
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** The self-heal: our TransactionManager events in [from, to] whose transaction the books lack, named once. */
async function nameUnbooked(deps: ReconcilerDeps, chainId: number, fromBlock: number, toBlock: number) {
  if (deps.ledgerQueue === undefined) return [];
  const queue = deps.ledgerQueue;
  try {
    const events = await scanRouterEvents({
      provider: deps.providerFor(chainId),
      transactionManager: deps.config.chainConfig[String(chainId)].transactionManagerAddress,
      router: deps.routerAddress,
      fromBlock,
      toBlock,
      onUndecodable: (log) =>
        deps.logger.warn("ledger: undecodable TransactionManager log skipped", {
          at: "ledger.reconcile",
          ...undecodableLogFields(log),
        }),
    });
    const hashes = [...new Set(events.map((e) => e.transactionHash.toLowerCase()))];
    if (hashes.length === 0) return [];
    const booked = await deps.pool.query<{ hash: string }>(
      "SELECT DISTINCT tx_hash AS hash FROM ledger_events WHERE chain_id = $1 AND tx_hash = ANY($2)",
      [chainId, hashes],
    );
    const known = new Set(booked.rows.map((r) => r.hash));
    const unbooked = hashes.filter((h) => !known.has(h));
    for (const hash of unbooked) {
      const job: BookTransactionJobData = { chainId, hash, source: "reconcile" };
      await nameTransaction(queue, job);
    }
    return unbooked;
  } catch (err) {
    deps.logger.warn("ledger: the reconciliation's log scan failed; the drift is reported all the same", {
      at: "ledger.reconcile",
      chainId,
      error: errorMessage(err),
    });
    return [];
  }
}

/** Every chain once, one after the other; a chain whose reads fail is logged and left for the next run. */
export async function reconcileOnce(deps: ReconcilerDeps): Promise<Map<number, ChainReconcileOutcome>> {
  const outcomes = new Map<number, ChainReconcileOutcome>();
  for (const chain of Object.values(deps.config.chainConfig)) {
    try {
      outcomes.set(chain.chainId, await reconcileChain(deps, chain.chainId));
    } catch (err) {
      deps.logger.warn("ledger: reconciliation of a chain failed; the next run tries again", {
        at: "ledger.reconcile",
        chainId: chain.chainId,
        error: errorMessage(err),
      });
    }
  }
  return outcomes;
}

/** Runs reconcileOnce every `intervalMs` (the first after one interval, as the repricer); a slow run is not stacked on. */
export function startReconciler(deps: ReconcilerDeps & { readonly intervalMs: number }): { stop(): Promise<void> } {
  let running: Promise<unknown> | undefined;
  const run = () => {
    if (running) return;
    running = reconcileOnce(deps).finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(run, deps.intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}

import type { Redis } from "ioredis";
import type { ChainProvider } from "../chain/chain-provider";
import { scanRouterEvents } from "../chain/router-logs";
import { undecodableLogFields } from "../chain/tm-log-decoder";
import { errorMessage } from "../errors";
import { readTxRecord } from "../metrics/router-state";
import { routerKey } from "../coordination/keys";
import { bookTransaction, ReceiptNotReadyError, type BookTransactionDeps } from "./book-transaction";
import type { LedgerPool } from "./database";
import type { LedgerTotal } from "../protocol/ledger-totals";

/**
 * The rebuild (docs/accounting.md#rebuild): the books derived again from the chain, through the same booking as
 * the ledger process (book-transaction.ts), into another database or schema, to compare with the live books.
 * What it can find of the router's transactions:
 *  - every transaction holding a TransactionManager event of this router (its logs, scanned in chunks);
 *  - every transaction a submitter kept a send record of in Redis (approvals, nonce fills included), while
 *    the records are kept (their TTL) and Redis was not wiped.
 * What it cannot: a signer transaction with no event of ours whose send record is gone (or one sent outside
 * the router), short of reading every block's transactions.
 */

export interface RebuildChainRange {
  readonly chainId: number;
  readonly fromBlock: number;
  readonly toBlock: number;
}

export interface RebuildChainResult extends RebuildChainRange {
  /** Transactions found, by where: logs, send records (a hash found by both counts in logs). */
  readonly found: { readonly logs: number; readonly sendRecords: number };
  readonly booked: number;
  /** Found, but the chain would not give a confirmed receipt: not booked, listed for the operator. */
  readonly notBooked: readonly string[];
}

/** The hashes of one chain's send records in Redis whose transaction was mined in the range. */
export async function sendRecordHashes(redis: Redis, prefix: string, range: RebuildChainRange): Promise<string[]> {
  const pattern = `${routerKey(prefix, "tx", range.chainId)}:*`;
  const hashes = new Set<string>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 500);
    cursor = next;
    for (const key of keys) {
      const jobId = key.slice(pattern.length - 1);
      const record = await readTxRecord(redis, prefix, range.chainId, jobId).catch(() => undefined);
      const result = record?.result;
      if (result && !result.noop && result.blockNumber >= range.fromBlock && result.blockNumber <= range.toBlock) {
        hashes.add(result.transactionHash.toLowerCase());
      }
    }
  } while (cursor !== "0");
  return [...hashes];
}

/** One chain: find the router's transactions in the range and book each (source rebuild) into `deps.pool`. */
export async function rebuildChain(
  deps: BookTransactionDeps & { readonly redis?: Redis },
  range: RebuildChainRange,
): Promise<RebuildChainResult> {
  const provider: ChainProvider = deps.providerFor(range.chainId);
  const events = await scanRouterEvents({
    provider,
    transactionManager: deps.config.chainConfig[String(range.chainId)].transactionManagerAddress,
    router: deps.routerAddress,
    fromBlock: range.fromBlock,
    toBlock: range.toBlock,
    onUndecodable: (log) =>
      deps.logger.warn("ledger rebuild: undecodable TransactionManager log skipped", {
        at: "ledger.rebuild",
        ...undecodableLogFields(log),
      }),
  });
  const fromLogs = [...new Set(events.map((e) => e.transactionHash.toLowerCase()))];
  const fromRecords = deps.redis ? await sendRecordHashes(deps.redis, deps.config.redisPrefix, range) : [];
  const extra = fromRecords.filter((h) => !fromLogs.includes(h));
  let booked = 0;
  const notBooked: string[] = [];
  for (const hash of [...fromLogs, ...extra]) {
    try {
      const result = await bookTransaction(deps, { chainId: range.chainId, hash, source: "rebuild" });
      if (result.outcome !== "not_ours") booked += 1;
    } catch (err) {
      if (!(err instanceof ReceiptNotReadyError)) throw err;
      deps.logger.warn("ledger rebuild: no confirmed receipt; not booked", {
        at: "ledger.rebuild",
        chainId: range.chainId,
        hash,
        reason: errorMessage(err),
      });
      notBooked.push(hash);
    }
  }
  return { ...range, found: { logs: fromLogs.length, sendRecords: extra.length }, booked, notBooked };
}

/** The books' totals over one chain's block range, in a stable order. */
export async function ledgerTotals(pool: LedgerPool, range: RebuildChainRange): Promise<LedgerTotal[]> {
  const result = await pool.query<LedgerTotal>(
    `SELECT "chainId", "assetId", kind, rows::int AS rows, sum FROM (
       SELECT chain_id AS "chainId", asset_id AS "assetId", event || coalesce('/' || side, '') AS kind,
              count(*) AS rows, sum(amount)::text AS sum
         FROM ledger_events WHERE chain_id = $1 AND block_number BETWEEN $2 AND $3
        GROUP BY 1, 2, 3
       UNION ALL
       SELECT chain_id, '0x0000000000000000000000000000000000000000', 'gas', count(*), sum(cost_wei)::text
         FROM ledger_transactions WHERE chain_id = $1 AND block_number BETWEEN $2 AND $3
        GROUP BY 1
     ) t ORDER BY "chainId", "assetId", kind`,
    [range.chainId, range.fromBlock, range.toBlock],
  );
  return result.rows;
}

import { getAddress, zeroPadValue } from "ethers";
import type { ChainProvider } from "./chain-provider";
import { LOG_CHUNK_BLOCKS } from "./transfer-events";
import { decodeTmLogs, TM_TOPICS, type TmEvent, type UndecodableTmLog } from "./tm-log-decoder";

/**
 * eth_getLogs topic filters for one router: its transfers, and its liquidity changes. The three Transaction*
 * events index (user, router, transactionId), so the router is topic 2; the two Liquidity* events index
 * (router, assetId), so topic 1.
 */
export function routerLogFilters(router: string): {
  transfers: Array<string | string[] | null>;
  liquidity: Array<string | string[] | null>;
} {
  const routerTopic = zeroPadValue(getAddress(router), 32).toLowerCase();
  return {
    transfers: [[TM_TOPICS.prepared, TM_TOPICS.fulfilled, TM_TOPICS.cancelled], null, routerTopic],
    liquidity: [[TM_TOPICS.liquidityAdded, TM_TOPICS.liquidityRemoved], routerTopic],
  };
}

/**
 * Every TransactionManager event of one router in [fromBlock, toBlock], oldest first, read in chunks of
 * `chunkBlocks` (two eth_getLogs per chunk: transfers and liquidity). Reconciliation and the rebuild use it to
 * find the router's transactions on chain; the poller follows the same filters block by block.
 */
export async function scanRouterEvents(params: {
  readonly provider: Pick<ChainProvider, "read">;
  readonly transactionManager: string;
  readonly router: string;
  readonly fromBlock: number;
  readonly toBlock: number;
  readonly chunkBlocks?: number;
  readonly onUndecodable: (log: UndecodableTmLog) => void;
}): Promise<TmEvent[]> {
  const chunk = params.chunkBlocks ?? LOG_CHUNK_BLOCKS;
  const filters = routerLogFilters(params.router);
  const found: TmEvent[] = [];
  for (let lo = params.fromBlock; lo <= params.toBlock; lo += chunk) {
    const hi = Math.min(params.toBlock, lo + chunk - 1);
    for (const topics of [filters.transfers, filters.liquidity]) {
      const logs = await params.provider.read(
        (p) => p.getLogs({ address: params.transactionManager, topics, fromBlock: lo, toBlock: hi }),
        "getLogs",
      );
      const { events, undecodable } = decodeTmLogs(logs);
      undecodable.forEach(params.onUndecodable);
      found.push(...events);
    }
  }
  return found.sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
}

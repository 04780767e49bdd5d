import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { errorMessage } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import { redactUrl } from "../../../shared/logging/redact";
import { completionBlockOf } from "../../../shared/protocol/completion-block";
import type { TransferLookup } from "../../../shared/transfers/transfer-store";
import type { TransferRecord } from "../../../shared/protocol/types";
import { transferKey } from "../../../shared/queues";
import {
  SUBGRAPH_PAGE_SIZE,
  SubgraphUnavailableError,
  routerTransactions,
  type SubgraphClient,
  type SubgraphQueryName,
} from "./subgraph-client";
import { subgraphToRecord, type SubgraphTransaction } from "./subgraph-mapping";
import type { SyncParams, SyncResult, TransferSource } from "./transfer-source";

/** Larger than any expiry: GetReceiverTransactions with it lists every open receiving side, expired or not. */
const ANY_EXPIRY = String(Number.MAX_SAFE_INTEGER);
const IDS_PER_QUERY = 100;

/** The records whose state on this chain the poller must follow, besides the open lists the queries return. */
export interface WatchedTransfers {
  /** Records still Prepared on this chain in the store. */
  readonly open: readonly TransferRecord[];
  /** Open sending sides on other chains whose receiving chain is this one (their receiving side lives here). */
  readonly incoming: readonly TransferRecord[];
}

export interface SubgraphSourceParams {
  readonly chainId: number;
  readonly urls: readonly string[];
  readonly routerAddress: string;
  /** Blocks: a subgraph further behind the head than this is not used (chainConfig `subgraphSyncBuffer`). */
  readonly syncBuffer: number;
  readonly client: SubgraphClient;
  readonly provider: ChainProvider;
  /** What the store already holds, so the source can skip work it has done before. */
  readonly lookup: TransferLookup;
  readonly watched: () => Promise<WatchedTransfers>;
  readonly logger: Logger;
}

interface SyncedUrl {
  readonly url: string;
  readonly block: number;
}

/**
 * The router's transfers on one chain from the configured subgraphs (docs/protocol.md#subgraph), state-based:
 * every sync lists the open sending and receiving sides, then asks for the current state of every transfer
 * the store still has open, or that another chain's open sending side expects here, and that dropped out of
 * those lists. Paging is not pinned to a block, so a page boundary can shift while a record changes; the
 * record then shows up on the next sync, never lost, because each sync asks again.
 */
export function createSubgraphSource(p: SubgraphSourceParams): TransferSource {
  let synced: SyncedUrl[] = [];
  const routerId = p.routerAddress.toLowerCase();

  const isUsable = async (head: number): Promise<boolean> => {
    const found: SyncedUrl[] = [];
    for (const url of p.urls) {
      try {
        const block = await p.client.blockNumber(url);
        if (head - block <= p.syncBuffer) {
          found.push({ url, block });
        } else {
          p.logger.debug("subgraph behind the sync buffer", {
            at: "poller.subgraph",
            url: redactUrl(url),
            block,
            head,
            syncBuffer: p.syncBuffer,
          });
        }
      } catch (err) {
        p.logger.debug("subgraph block number unavailable", {
          at: "poller.subgraph",
          url: redactUrl(url),
          error: errorMessage(err),
        });
      }
    }
    synced = found;
    return found.length > 0;
  };

  const sync = async ({ confirmedHead, sink }: SyncParams): Promise<SyncResult> => {
    if (synced.length === 0) {
      throw new SubgraphUnavailableError("no synced subgraph (isUsable was not called or found none)");
    }
    const urls = synced.map((s) => s.url);
    // The state read is as old as the oldest subgraph that answered; min over all of them is safe.
    const subgraphBlock = Math.min(...synced.map((s) => s.block));
    const listed = [
      ...(await paged(p.client, urls, "GetSenderTransactions", {
        routerId,
        sendingChainId: String(p.chainId),
        status: "Prepared",
      })),
      ...(await paged(p.client, urls, "GetReceiverTransactions", {
        routerId,
        receivingChainId: String(p.chainId),
        status: "Prepared",
        expiry_lt: ANY_EXPIRY,
      })),
    ];
    const listedKeys = new Set(listed.map((t) => transferKey(t.transactionId, t.user.id)));
    const watched = await p.watched();
    const missingIds = [...watched.open, ...watched.incoming]
      .filter((r) => !listedKeys.has(transferKey(r.txData.transactionId, r.txData.user)))
      .map((r) => r.txData.transactionId.toLowerCase());
    const changed = await byIds(p.client, urls, [...new Set(missingIds)], routerId);

    const records = [...listed, ...changed].map(subgraphToRecord).filter((r) => r.chainId === p.chainId);
    const confirmed: TransferRecord[] = [];
    for (const record of records) {
      const withBlock = await confirmedRecord(p, record, confirmedHead);
      if (withBlock !== undefined) {
        confirmed.push(withBlock);
      }
    }
    await sink({ records: confirmed, liquidityEvents: [] });
    return { syncedBlock: Math.min(subgraphBlock, confirmedHead) };
  };

  return { name: "subgraph", isUsable, sync };
}

async function paged(
  client: SubgraphClient,
  urls: readonly string[],
  name: SubgraphQueryName,
  variables: Record<string, unknown>,
): Promise<SubgraphTransaction[]> {
  const all: SubgraphTransaction[] = [];
  for (let skip = 0; ; skip += SUBGRAPH_PAGE_SIZE) {
    const { data } = await client.query<{ router?: { transactions?: unknown } | null }>(urls, name, {
      ...variables,
      first: SUBGRAPH_PAGE_SIZE,
      skip,
    });
    const page = routerTransactions(data);
    all.push(...page);
    if (page.length < SUBGRAPH_PAGE_SIZE) {
      return all;
    }
  }
}

async function byIds(
  client: SubgraphClient,
  urls: readonly string[],
  ids: readonly string[],
  routerId: string,
): Promise<SubgraphTransaction[]> {
  const all: SubgraphTransaction[] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
    const { data } = await client.query<{ transactions?: unknown }>(urls, "GetTransactionsWithRouter", {
      transactionIds: ids.slice(i, i + IDS_PER_QUERY),
      routerId,
    });
    if (!Array.isArray(data.transactions)) {
      throw new SubgraphUnavailableError("transactions is not a list");
    }
    all.push(...(data.transactions as SubgraphTransaction[]));
  }
  return all;
}

/**
 * Only confirmed changes reach the store, as with the logs source. A prepare carries its block; a fulfill or
 * cancel does not, so its receipt gives it (once: a record already stored with its block is reused). A
 * receipt that is missing or failed means the subgraph shows a change the chain does not: skipped.
 */
async function confirmedRecord(
  p: SubgraphSourceParams,
  record: TransferRecord,
  confirmedHead: number,
): Promise<TransferRecord | undefined> {
  if (record.status === "Prepared") {
    return record.txData.preparedBlockNumber <= confirmedHead ? record : undefined;
  }
  const stored = await p.lookup(p.chainId, record.txData.transactionId, record.txData.user);
  let block = stored?.status === record.status ? completionBlockOf(stored) : undefined;
  if (block === undefined) {
    const hash = record.status === "Fulfilled" ? record.fulfillTransactionHash : record.cancelTransactionHash;
    const receipt = await p.provider.getTransactionReceipt(hash);
    block = receipt !== null && receipt.status === 1 ? receipt.blockNumber : undefined;
  }
  if (block === undefined || block > confirmedHead) {
    return undefined;
  }
  return record.status === "Fulfilled"
    ? { ...record, fulfillBlockNumber: block }
    : { ...record, cancelBlockNumber: block };
}

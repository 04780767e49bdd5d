import { RouterError, errorMessage, errorClass } from "../../../shared/errors";
import { redactUrl } from "../../../shared/logging/redact";
import { SUBGRAPH_TRANSACTION_FIELDS, type SubgraphTransaction } from "./subgraph-mapping";

/**
 * The NXTP v1-runtime subgraph queries the poller uses (docs/protocol.md#subgraph), with `first`/`skip` added: The
 * Graph returns 100 entities when `first` is absent, which silently capped the original's active list.
 */
const PAGE_FIELDS = `first: $first, skip: $skip, orderBy: preparedBlockNumber, orderDirection: desc`;

export const SUBGRAPH_QUERIES = {
  GetBlockNumber: `query GetBlockNumber { _meta { block { number } } }`,
  GetSenderTransactions:
    `query GetSenderTransactions($routerId: ID!, $sendingChainId: BigInt!, $status: TransactionStatus, $first: Int!, $skip: Int!) ` +
    `{ router(id: $routerId) { transactions(where: { status: $status, sendingChainId: $sendingChainId }, ${PAGE_FIELDS}) ` +
    `{ ${SUBGRAPH_TRANSACTION_FIELDS} } } }`,
  GetReceiverTransactions:
    `query GetReceiverTransactions($routerId: ID!, $receivingChainId: BigInt!, $status: TransactionStatus, $expiry_lt: BigInt!, ` +
    `$first: Int!, $skip: Int!) { router(id: $routerId) { transactions(where: { status: $status, ` +
    `receivingChainId: $receivingChainId, expiry_lt: $expiry_lt }, ${PAGE_FIELDS}) { ${SUBGRAPH_TRANSACTION_FIELDS} } } }`,
  GetTransactionsWithRouter:
    `query GetTransactionsWithRouter($transactionIds: [Bytes!], $routerId: String!) ` +
    `{ transactions(where: { transactionId_in: $transactionIds, router: $routerId }) { ${SUBGRAPH_TRANSACTION_FIELDS} } }`,
} as const;
export type SubgraphQueryName = keyof typeof SUBGRAPH_QUERIES;

export const DEFAULT_SUBGRAPH_TIMEOUT_MS = 10_000;
export const SUBGRAPH_PAGE_SIZE = 1_000;

/** Every subgraph URL failed a query (network, HTTP status, GraphQL errors or a malformed reply). */
export class SubgraphUnavailableError extends errorClass(RouterError, "SUBGRAPH_UNAVAILABLE", "retriable") {}

export interface SubgraphClient {
  /** `_meta.block.number` of one subgraph. */
  blockNumber(url: string): Promise<number>;
  /** Runs the query against `urls` in order, moving to the next on any failure; the data and the URL used. */
  query<T>(
    urls: readonly string[],
    name: SubgraphQueryName,
    variables: Record<string, unknown>,
  ): Promise<{ data: T; url: string }>;
}

export type FetchFn = (input: string, init: RequestInit) => Promise<Response>;

export function createSubgraphClient(params: { timeoutMs?: number; fetchFn?: FetchFn } = {}): SubgraphClient {
  const timeoutMs = params.timeoutMs ?? DEFAULT_SUBGRAPH_TIMEOUT_MS;
  const fetchFn = params.fetchFn ?? ((input, init) => fetch(input, init));

  const post = async (url: string, name: SubgraphQueryName, variables: Record<string, unknown>): Promise<unknown> => {
    const res = await fetchFn(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ query: SUBGRAPH_QUERIES[name], variables }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) {
      throw new Error(`HTTP ${res.status}`);
    }
    const body = (await res.json()) as { data?: unknown; errors?: ReadonlyArray<{ message?: string }> };
    if (body.errors !== undefined && body.errors.length > 0) {
      throw new Error(
        `GraphQL errors: ${body.errors
          .map((e) => e.message ?? "?")
          .join("; ")
          .slice(0, 300)}`,
      );
    }
    if (body.data === null || typeof body.data !== "object") {
      throw new Error("reply without data");
    }
    return body.data;
  };

  const query = async <T>(
    urls: readonly string[],
    name: SubgraphQueryName,
    variables: Record<string, unknown>,
  ): Promise<{ data: T; url: string }> => {
    const failures: string[] = [];
    for (const url of urls) {
      try {
        return { data: (await post(url, name, variables)) as T, url };
      } catch (err) {
        failures.push(`${redactUrl(url)}: ${errorMessage(err)}`);
      }
    }
    throw new SubgraphUnavailableError(
      `${name} failed on every subgraph (${failures.join(" | ") || "none configured"})`,
      { query: name },
    );
  };

  return {
    query,
    blockNumber: async (url) => {
      const { data } = await query<{ _meta?: { block?: { number?: unknown } } }>([url], "GetBlockNumber", {});
      const block = Number(data._meta?.block?.number);
      if (!Number.isSafeInteger(block) || block < 0) {
        throw new SubgraphUnavailableError("GetBlockNumber returned no block number", { url: redactUrl(url) });
      }
      return block;
    },
  };
}

/** A `router(id){transactions}` reply: the transactions, or none when the subgraph does not know the router. */
export function routerTransactions(data: { router?: { transactions?: unknown } | null }): SubgraphTransaction[] {
  const list = data.router?.transactions;
  if (data.router === null || data.router === undefined) {
    return [];
  }
  if (!Array.isArray(list)) {
    throw new SubgraphUnavailableError("router.transactions is not a list");
  }
  return list as SubgraphTransaction[];
}

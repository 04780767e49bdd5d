import type { Block, BlockTag, FeeData, JsonRpcProvider, TransactionReceipt, TransactionRequest } from "ethers";
import type { RouterError } from "../errors";
import type { Logger } from "../logging/create-logger";
import { routerMetrics } from "../metrics/router-metrics";
import { ProviderLaggingError, RpcUnavailableError, toChainError } from "./errors";
import { broadcastToAll, type BroadcastResult } from "./provider-broadcast";
import { buildEntries } from "./provider-entries";
import { createHeadRefresh, createHeadTracker, type HeadTracker } from "./provider-heads";

export const DEFAULT_MAX_LAG_BLOCKS = 5;
export const DEFAULT_HEAD_REFRESH_MS = 3_000;

export interface ChainProviderOptions {
  readonly chainId: number;
  /** In priority order. ws(s) URLs are skipped with a warning (see createChainProvider). */
  readonly urls: readonly string[];
  readonly logger: Logger;
  /** A provider further than this behind the best head seen is not read from. */
  readonly maxLagBlocks?: number;
  /** Heads are re-read at most this often, in the background once known. */
  readonly headRefreshMs?: number;
  /** Per JSON-RPC request; a provider that takes longer counts as unavailable for that call. */
  readonly requestTimeoutMs?: number;
}

export interface ProviderHealth {
  /** Redacted URL: safe to log and to use as a metric label. */
  readonly label: string;
  readonly head?: number;
  readonly healthy: boolean;
  readonly lagging: boolean;
}

export interface ChainProvider {
  readonly chainId: number;
  /**
   * Runs `fn` against providers in priority order, skipping laggards; moves on only when a provider is
   * unavailable (RpcUnavailableError). Any other error (a revert, a nonce error) is thrown at once.
   */
  read<T>(fn: (provider: JsonRpcProvider) => Promise<T>, what?: string): Promise<T>;
  /**
   * Runs `fn` against every in-sync provider (then the unhealthy ones) at once, each answer or error on its
   * own: for facts one provider alone must not decide (a nonce reported taken, before a rebuild).
   */
  readEach<T>(
    fn: (provider: JsonRpcProvider) => Promise<T>,
    what?: string,
  ): Promise<Array<{ readonly label: string; readonly value?: T; readonly error?: RouterError }>>;
  /** Sends to every usable provider at once; succeeds if any took it or already had it. */
  broadcast(rawTx: string): Promise<BroadcastResult>;
  getBlockNumber(): Promise<number>;
  getTransactionReceipt(hash: string): Promise<TransactionReceipt | null>;
  getTransactionCount(address: string, blockTag: BlockTag): Promise<number>;
  getFeeData(): Promise<FeeData>;
  estimateGas(tx: TransactionRequest): Promise<bigint>;
  call(tx: TransactionRequest, blockTag?: BlockTag): Promise<string>;
  getBalance(address: string, blockTag?: BlockTag): Promise<bigint>;
  getBlock(blockTag: BlockTag): Promise<Block | null>;
  /** Redacted URL of the provider that answered the last successful read. */
  lastServedBy(): string | undefined;
  health(): readonly ProviderHealth[];
  destroy(): void;
}

/**
 * One object per chain over one ethers JsonRpcProvider per configured URL. ethers' FallbackProvider is not
 * used: it does not track lag (connext/monorepo#567, #627) and compares errors by JSON-RPC id (#4862).
 * WebSocket URLs are skipped with a warning: ethers v6's WebSocketProvider does not reconnect, so a dropped
 * socket would silently remove the provider; operators list the http(s) endpoint of the same vendor.
 */
export function createChainProvider(opts: ChainProviderOptions): ChainProvider {
  const logger = opts.logger.child({ chainId: opts.chainId });
  const maxLag = opts.maxLagBlocks ?? DEFAULT_MAX_LAG_BLOCKS;
  const refreshMs = opts.headRefreshMs ?? DEFAULT_HEAD_REFRESH_MS;
  const entries = buildEntries(opts, logger);
  const heads = createHeadTracker({ entries, chainId: opts.chainId, maxLag, logger });
  let destroyed = false;
  const ensureHeads = createHeadRefresh(heads, refreshMs, () => destroyed);
  let servedBy: string | undefined;

  const read = async <T>(fn: (provider: JsonRpcProvider) => Promise<T>, what = "read"): Promise<T> => {
    await ensureHeads();
    const served = await readWithFailover(heads, opts.chainId, fn, what);
    servedBy = served.label;
    return served.value;
  };

  return {
    chainId: opts.chainId,
    read,
    readEach: async (fn) => {
      await ensureHeads();
      return Promise.all(
        heads.readOrder().map(async (entry) => {
          try {
            return { label: entry.label, value: await fn(entry.provider) };
          } catch (err) {
            return { label: entry.label, error: toChainError(err) };
          }
        }),
      );
    },
    broadcast: async (rawTx) => {
      await ensureHeads();
      return broadcastToAll(heads.broadcastTargets(), rawTx, opts.chainId, logger);
    },
    ...readMethods(read),
    lastServedBy: () => servedBy,
    health: () =>
      entries.map((e) => ({ label: e.label, head: e.head, healthy: e.healthy && !e.wrongChain, lagging: e.lagging })),
    destroy: () => {
      destroyed = true;
      for (const entry of entries) {
        entry.provider.destroy();
      }
    },
  };
}

/**
 * `fn` on the in-sync providers in priority order, moving on only when one is unavailable (any other error is
 * the call's answer). When all fail: ProviderLaggingError if some were skipped as lagging, else the last error.
 */
async function readWithFailover<T>(
  heads: HeadTracker,
  chainId: number,
  fn: (provider: JsonRpcProvider) => Promise<T>,
  what: string,
): Promise<{ value: T; label: string }> {
  let lastError: RouterError | undefined;
  for (const [index, entry] of heads.readOrder().entries()) {
    try {
      const value = await fn(entry.provider);
      if (index > 0) {
        routerMetrics().providerFailovers.inc({ chain: String(chainId) });
      }
      return { value, label: entry.label };
    } catch (err) {
      const chainError = toChainError(err);
      if (!(chainError instanceof RpcUnavailableError)) {
        throw chainError;
      }
      routerMetrics().providerErrors.inc({ chain: String(chainId), provider: entry.label });
      heads.markUnavailable(entry, chainError, what);
      lastError = chainError;
    }
  }
  const lagging = heads.laggingLabels();
  if (lagging.length > 0) {
    throw new ProviderLaggingError(
      `chain ${chainId}: every in-sync provider failed (${what}); lagging: ${lagging.join(", ")}`,
      { chainId },
      { cause: lastError },
    );
  }
  throw lastError ?? new RpcUnavailableError(`chain ${chainId}: no provider to ${what}`, { chainId });
}

type ReadMethod =
  | "getBlockNumber"
  | "getTransactionReceipt"
  | "getTransactionCount"
  | "getFeeData"
  | "estimateGas"
  | "call"
  | "getBalance"
  | "getBlock";

function readMethods(read: ChainProvider["read"]): Pick<ChainProvider, ReadMethod> {
  return {
    getBlockNumber: () => read((p) => p.getBlockNumber(), "getBlockNumber"),
    getTransactionReceipt: (hash) => read((p) => p.getTransactionReceipt(hash), "getTransactionReceipt"),
    getTransactionCount: (address, blockTag) =>
      read((p) => p.getTransactionCount(address, blockTag), "getTransactionCount"),
    getFeeData: () => read((p) => p.getFeeData(), "getFeeData"),
    estimateGas: (tx) => read((p) => p.estimateGas(tx), "estimateGas"),
    call: (tx, blockTag) => read((p) => p.call({ ...tx, blockTag }), "call"),
    getBalance: (address, blockTag) => read((p) => p.getBalance(address, blockTag), "getBalance"),
    getBlock: (blockTag) => read((p) => p.getBlock(blockTag), "getBlock"),
  };
}

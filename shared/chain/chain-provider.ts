import {
  FetchRequest,
  JsonRpcProvider,
  Network,
  keccak256,
  type Block,
  type BlockTag,
  type FeeData,
  type TransactionReceipt,
  type TransactionRequest,
} from "ethers";
import { RouterError, errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import { redactUrl } from "../logging/redact";
import {
  ChainRequestError,
  InsufficientFundsError,
  NonceTooLowError,
  ProviderLaggingError,
  ReplacementUnderpricedError,
  RpcUnavailableError,
  TransactionAlreadyKnownError,
  TransactionRevertedError,
  toChainError,
} from "./errors";
import { routerMetrics } from "../metrics/router-metrics";
import { sleep } from "../timing";

export const DEFAULT_MAX_LAG_BLOCKS = 5;
export const DEFAULT_HEAD_REFRESH_MS = 3_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** A read waits at most this long for a head refresh; a black-holed provider must not stall every read. */
const HEAD_WAIT_MS = 2_000;

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

export interface BroadcastResult {
  readonly hash: string;
  /** Redacted URLs of the providers that took the transaction. */
  readonly acceptedBy: readonly string[];
  readonly alreadyKnownBy: readonly string[];
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

/** The chain's provider list cannot be used at all (no http(s) URL). */
export class ChainProviderConfigError extends RouterError {
  readonly code = "CHAIN_PROVIDER_CONFIG_INVALID";
  readonly retriable = false;
}

interface Entry {
  readonly label: string;
  readonly provider: JsonRpcProvider;
  head?: number;
  healthy: boolean;
  lagging: boolean;
  /** eth_chainId answered a different chain: never used again (its reads would be another chain's state). */
  wrongChain: boolean;
  chainChecked: boolean;
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
 * Makes sure the heads are at most `refreshMs` old before a call: one refresh at a time, in the background,
 * except the very first, which a call waits for (at most HEAD_WAIT_MS).
 */
function createHeadRefresh(heads: HeadTracker, refreshMs: number, destroyed: () => boolean): () => Promise<void> {
  let headsAtMs = 0;
  let refreshing: Promise<void> | undefined;
  const refresh = (): Promise<void> => {
    refreshing ??= heads.refresh().finally(() => {
      headsAtMs = Date.now();
      refreshing = undefined;
    });
    return refreshing;
  };
  return async () => {
    if (destroyed() || Date.now() - headsAtMs < refreshMs) {
      return;
    }
    const running = refresh();
    if (headsAtMs === 0) {
      await Promise.race([running, sleep(HEAD_WAIT_MS)]);
    }
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

function buildEntries(opts: ChainProviderOptions, logger: Logger): Entry[] {
  const network = Network.from(opts.chainId);
  const labels = new Set<string>();
  const entries: Entry[] = [];
  for (const url of opts.urls) {
    let label = redactUrl(url);
    if (/^wss?:/i.test(url)) {
      logger.warn("websocket provider skipped: list an http(s) URL instead", { at: "chain.provider", provider: label });
      continue;
    }
    if (labels.has(label)) {
      label = `${label}#${entries.length}`;
    }
    labels.add(label);
    const request = new FetchRequest(url);
    request.timeout = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    // ethers retries a 429 up to 12 times with backoff; another provider is the faster way out.
    request.setThrottleParams({ maxAttempts: 2 });
    // No batching (one slow call must not hold others) and no 250 ms result cache (stale nonces).
    const provider = new JsonRpcProvider(request, network, {
      staticNetwork: network,
      batchMaxCount: 1,
      cacheTimeout: -1,
    });
    entries.push({ label, provider, healthy: true, lagging: false, wrongChain: false, chainChecked: false });
  }
  if (entries.length === 0) {
    throw new ChainProviderConfigError(`chain ${opts.chainId} has no http(s) provider URL`, { chainId: opts.chainId });
  }
  return entries;
}

interface HeadTracker {
  refresh(): Promise<void>;
  /** Healthy in-sync providers in priority order, then the unhealthy ones as a last resort. */
  readOrder(): Entry[];
  broadcastTargets(): Entry[];
  markUnavailable(entry: Entry, err: RouterError, what: string): void;
  laggingLabels(): string[];
}

function createHeadTracker(params: { entries: Entry[]; chainId: number; maxLag: number; logger: Logger }): HeadTracker {
  const { entries, chainId, maxLag, logger } = params;
  const usable = (): Entry[] => entries.filter((e) => !e.wrongChain);

  const setHealthy = (entry: Entry, healthy: boolean, err?: RouterError, what = "getBlockNumber"): void => {
    if (entry.healthy && !healthy) {
      logger.warn("provider unavailable, skipping it", {
        at: "chain.provider",
        provider: entry.label,
        call: what,
        code: err?.code,
        error: err ? errorMessage(err) : undefined,
      });
    } else if (!entry.healthy && healthy) {
      logger.info("provider available again", { at: "chain.provider", provider: entry.label });
    }
    entry.healthy = healthy;
  };

  const refreshOne = async (entry: Entry): Promise<void> => {
    try {
      await checkChain(entry, chainId, logger);
      entry.head = await entry.provider.getBlockNumber();
      setHealthy(entry, true);
    } catch (err) {
      setHealthy(entry, false, toChainError(err));
    }
  };

  return {
    refresh: async () => {
      await Promise.all(usable().map(refreshOne));
      updateLag(usable(), maxLag, logger);
    },
    readOrder: () => {
      const inSync = usable().filter((e) => e.healthy && !e.lagging);
      return [...inSync, ...usable().filter((e) => !e.healthy)];
    },
    broadcastTargets: () => {
      const healthy = usable().filter((e) => e.healthy);
      return healthy.length > 0 ? healthy : usable();
    },
    markUnavailable: (entry, err, what) => setHealthy(entry, false, err, what),
    laggingLabels: () =>
      usable()
        .filter((e) => e.lagging)
        .map((e) => e.label),
  };
}

/** Once per provider: one that answers another chain id is marked and never used (its reads would be wrong). */
async function checkChain(entry: Entry, chainId: number, logger: Logger): Promise<void> {
  if (entry.chainChecked) {
    return;
  }
  const answered = Number(BigInt(await entry.provider.send("eth_chainId", [])));
  entry.chainChecked = true;
  if (answered !== chainId) {
    entry.wrongChain = true;
    logger.error("provider serves another chain: never used", {
      at: "chain.provider",
      provider: entry.label,
      expectedChainId: chainId,
      answeredChainId: answered,
    });
  }
}

/** Marks as lagging every healthy provider more than `maxLag` blocks behind the best healthy head; logs changes. */
function updateLag(entries: readonly Entry[], maxLag: number, logger: Logger): void {
  const heads = entries.filter((e) => e.healthy && e.head !== undefined).map((e) => e.head as number);
  const best = heads.length > 0 ? Math.max(...heads) : undefined;
  for (const entry of entries) {
    const lagBlocks = best !== undefined && entry.head !== undefined ? best - entry.head : 0;
    const lagging = entry.healthy && lagBlocks > maxLag;
    if (lagging !== entry.lagging) {
      const log = lagging ? logger.warn : logger.info;
      log(lagging ? "provider lags behind, skipping it" : "provider caught up", {
        at: "chain.provider",
        provider: entry.label,
        head: entry.head,
        bestHead: best,
        lagBlocks,
        maxLagBlocks: maxLag,
      });
    }
    entry.lagging = lagging;
  }
}

/** Most telling first: a nonce or funds problem explains a failed broadcast better than a dead provider. */
const BROADCAST_ERROR_PRIORITY: ReadonlyArray<abstract new (...args: never[]) => RouterError> = [
  NonceTooLowError,
  InsufficientFundsError,
  ReplacementUnderpricedError,
  TransactionRevertedError,
  ChainRequestError,
  RpcUnavailableError,
];

async function broadcastToAll(
  targets: Entry[],
  rawTx: string,
  chainId: number,
  logger: Logger,
): Promise<BroadcastResult> {
  const hash = keccak256(rawTx);
  const settled = await Promise.allSettled(targets.map((e) => e.provider.send("eth_sendRawTransaction", [rawTx])));
  const acceptedBy: string[] = [];
  const alreadyKnownBy: string[] = [];
  const errors: RouterError[] = [];
  settled.forEach((outcome, i) => {
    const label = targets[i].label;
    if (outcome.status === "fulfilled") {
      acceptedBy.push(label);
      return;
    }
    const err = toChainError(outcome.reason);
    if (err instanceof TransactionAlreadyKnownError) {
      alreadyKnownBy.push(label);
      return;
    }
    errors.push(err);
    const log = err instanceof RpcUnavailableError ? logger.warn : logger.debug;
    log("provider refused the transaction", {
      at: "chain.broadcast",
      provider: label,
      transactionHash: hash,
      code: err.code,
    });
  });
  if (acceptedBy.length > 0 || alreadyKnownBy.length > 0) {
    return { hash, acceptedBy, alreadyKnownBy };
  }
  for (const kind of BROADCAST_ERROR_PRIORITY) {
    const found = errors.find((e) => e instanceof kind);
    if (found) {
      throw found;
    }
  }
  throw new RpcUnavailableError(`chain ${chainId}: no provider to broadcast to`, { chainId, transactionHash: hash });
}

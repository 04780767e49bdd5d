import { Queue } from "bullmq";
import { getAddress } from "ethers";
import { Redis } from "ioredis";
import { createChainProvider, type ChainProvider, type ChainProviderOptions } from "../../shared/chain/chain-provider";
import { createRouterBalanceReader } from "../../shared/chain/router-balances";
import type { ChainConfig, RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { DEFAULT_TOLERANCE_PERCENT } from "../../shared/protocol/amounts";
import { pollerLeaseKey, pollerLeaseTermKey, txQueueName, workerConnection } from "../../shared/queues";
import { createLease, newLeaseOwnerId, type FenceSource } from "../../shared/queues/lease";
import { createSigner } from "../../shared/signer/create-signer";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations } from "../../shared/transfers/bid-reservations";
import { createTransferStore, type TransferStore } from "../../shared/transfers/transfer-store";
import { createAlertOnce } from "./alert-once";
import { poolAssetsOf } from "./balances";
import type { PollerContext, TxQueue } from "./context";
import { chainConfigFor } from "../../shared/process/process-env";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import { runPollLoop } from "./loop";
import { DEFAULT_POLLER_LEASE_TTL_MS, createPollerLeaseKeeper, type PollerRole } from "./poller-lease";
import { createSourceSelector } from "./source-selector";
import { DEFAULT_MAX_RANGE_BLOCKS, createLogsSource } from "./sources/logs-source";
import { DEFAULT_RECONCILE_INTERVAL_MS, DEFAULT_RECONCILE_SEARCH_BLOCKS, createReconcileSchedule } from "./reconcile";
import { createSubgraphClient } from "./sources/subgraph-client";
import { createSubgraphSource, type WatchedTransfers } from "./sources/subgraph-source";
import type { TickResult } from "./tick";
import { settlesWithin } from "../../shared/timing";

export const DEFAULT_POLL_INTERVAL_MS = 1_000;
export const DEFAULT_MAX_IDLE_MS = 10_000;
export const DEFAULT_BALANCE_EVERY_TICKS = 10;
/** Well inside the auction's 60 s balance freshness bound, so a live poller's balances never count as stale. */
export const DEFAULT_BALANCE_MAX_INTERVAL_MS = 15_000;
/** Several block times on any chain, and far above the poll interval: a live poller re-stamps its head every poll. */
export const DEFAULT_RECEIVING_STALE_MS = 60_000;
/** Below run-service's 8 s shutdown bound, which is below PM2's kill_timeout. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;
const RESOURCE_CLOSE_TIMEOUT_MS = 1_000;

export interface PollerOptions {
  readonly intervalMs?: number;
  readonly maxIdleMs?: number;
  /** First block to read when no log cursor is stored (POLLER_START_BLOCK); default head − 100 000. */
  readonly startBlock?: number;
  readonly maxRangeBlocks?: number;
  readonly balanceEveryTicks?: number;
  readonly balanceMaxIntervalMs?: number;
  readonly receivingStaleMs?: number;
  /** Accepted deviation of the locked amount from the bid, percent (§3.5 step 4). */
  readonly tolerancePercent?: number;
  readonly subgraphTimeoutMs?: number;
  /** The signer's address; read from the config's signer (mnemonic or remote) by default. */
  readonly signerAddress?: string;
  readonly providerOptions?: Pick<ChainProviderOptions, "maxLagBlocks" | "headRefreshMs" | "requestTimeoutMs">;
  readonly closeTimeoutMs?: number;
  /** Every open record is reconciled against the contract this often (besides the first tick and rewinds). */
  readonly reconcileIntervalMs?: number;
  /** How far back the reconcile searches for a side the store has never seen. */
  readonly reconcileSearchBlocks?: number;
  readonly onTick?: (result: TickResult) => void;
  /** Poller lease TTL (POLLER_LEASE_TTL_MS), renewed every quarter of it; DEFAULT_POLLER_LEASE_TTL_MS by default. */
  readonly leaseTtlMs?: number;
  /** Pause points for tests (a write delayed past the lease); never set in production. */
  readonly hooks?: { readonly beforeCursorSave?: (block: number) => Promise<void> };
}

export interface StartPollerParams {
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly chainId: number;
  readonly options?: PollerOptions;
}

export interface RunningPoller {
  readonly chainId: number;
  readonly routerAddress?: string;
  readonly signerAddress?: string;
  /** The chain's provider (undefined in diagnostic mode): its health feeds /readyz and /metrics. */
  readonly provider?: ChainProvider;
  /** This process's identity in the chain's poller lease. */
  readonly ownerId?: string;
  /** "active" while this process holds the chain's poller lease and polls, else "standby". */
  role(): PollerRole;
  /** The lease term while active. */
  leaseTerm(): number | undefined;
  /** Aborts the loop at its next safe point, releases the lease, then closes connections; idempotent. */
  stop(): Promise<void>;
}

/**
 * Everything one poller process runs for its chain (main.ts and the tests both start it here): provider,
 * Redis stores, producer queues of every configured chain, the transfer sources and the sequential loop.
 * In diagnosticMode nothing runs: no loop, no lifecycle jobs, and the process idles until stopped.
 */
export async function startPoller(params: StartPollerParams): Promise<RunningPoller> {
  const { config, chainId } = params;
  const chain = chainConfigFor(config, chainId);
  const logger = params.logger.child({ chainId });
  const options = params.options ?? {};
  if (config.diagnosticMode) {
    logger.warn("diagnostic mode: poller idle", { at: "poller.start" });
    // No connection holds the event loop in this mode; this timer keeps the process up until stop().
    const keepAlive = setInterval(() => undefined, 2 ** 30);
    return {
      chainId,
      role: () => "standby",
      leaseTerm: () => undefined,
      stop: async () => clearInterval(keepAlive),
    };
  }

  const signerAddress = getAddress(
    options.signerAddress ??
      (await createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl }).getAddress()),
  );
  const routerAddress = getAddress(config.routerContractAddress ?? signerAddress);
  const provider = createChainProvider({ chainId, urls: chain.providers, logger, ...options.providerOptions });
  // Other chains' providers, for the reconcile's reads of the other side of a transfer; built on first use.
  const providers = new Map<number, ChainProvider>([[chainId, provider]]);
  const providerFor = (id: number): ChainProvider => {
    let found = providers.get(id);
    if (found === undefined) {
      found = createChainProvider({
        chainId: id,
        urls: chainConfigFor(config, id).providers,
        logger,
        ...options.providerOptions,
      });
      providers.set(id, found);
    }
    return found;
  };
  const redis = new Redis(workerConnection(config.redis));
  const logRedisError = throttledErrorLog(logger, "redis error", { at: "poller.redis" });
  redis.on("error", logRedisError);
  const queues = createQueues(config, redis, logRedisError);
  const leaseTtlMs = options.leaseTtlMs ?? DEFAULT_POLLER_LEASE_TTL_MS;
  const lease = createLease({
    redis,
    key: pollerLeaseKey(config.redisPrefix, chainId),
    termKey: pollerLeaseTermKey(config.redisPrefix, chainId),
    ownerId: newLeaseOwnerId(),
    ttlMs: leaseTtlMs,
  });
  const closeResources = async (): Promise<void> => {
    await Promise.all([...queues.values()].map((q) => settlesWithin(q.close(), RESOURCE_CLOSE_TIMEOUT_MS)));
    if (
      !(await settlesWithin(
        redis.quit().catch(() => undefined),
        RESOURCE_CLOSE_TIMEOUT_MS,
      ))
    ) {
      redis.disconnect();
    }
    for (const built of providers.values()) {
      built.destroy();
    }
  };

  const ctx = buildContext({
    config,
    chainId,
    chain,
    logger,
    provider,
    providerFor,
    redis,
    queues,
    signerAddress,
    routerAddress,
    options,
    fence: lease.current,
  });
  // One loop per lease term: the loop's first iteration runs at once (no initial delay), so a restarted poller or
  // a standby that takes over resumes from the stored cursor within one poll of holding the lease.
  const keeper = createPollerLeaseKeeper({
    lease,
    logger,
    intervalMs: Math.max(1, Math.floor(leaseTtlMs / 4)),
    runTerm: (_fence, signal, firstTick) => {
      // Another poller may have stored and decided since this process last ticked: check everything again.
      ctx.reconcile.requestAll();
      return runPollLoop(
        ctx,
        {
          intervalMs: options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS,
          maxIdleMs: options.maxIdleMs ?? DEFAULT_MAX_IDLE_MS,
          onTick: (result) => {
            firstTick();
            options.onTick?.(result);
          },
        },
        signal,
      );
    },
  });
  logger.info("poller started", {
    at: "poller.start",
    routerAddress,
    signerAddress,
    confirmations: chain.confirmations,
    subgraphs: chain.subgraph.length,
    intervalMs: options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS,
    ownerId: lease.ownerId,
    leaseTtlMs,
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (!(await settlesWithin(keeper.stop(), options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS))) {
        // An RPC or Redis call is stuck; dropping the connections below makes it reject and the loop end.
        logger.warn("poll loop did not stop in time; closing connections under it", { at: "poller.stop" });
      }
      await closeResources();
    })();
    return stopping;
  };
  // Ready (runService then tells PM2) at the first lease decision: as the active poller once the cursor is loaded
  // and verified and a first tick stored what it read and decided every open record (while the chain or Redis is
  // unreachable the loop retries and start waits); as a standby once the lease is seen held by another poller.
  const startedAtMs = Date.now();
  await keeper.start();
  logger.info("poller ready: first lease decision made", {
    at: "poller.ready",
    role: keeper.role(),
    ownerId: lease.ownerId,
    leaseTerm: keeper.term(),
    firstDecisionMs: Date.now() - startedAtMs,
  });
  return {
    chainId,
    routerAddress,
    signerAddress,
    provider,
    ownerId: lease.ownerId,
    role: keeper.role,
    leaseTerm: keeper.term,
    stop,
  };
}

interface BuildContextParams {
  readonly config: RouterConfig;
  readonly chainId: number;
  readonly chain: ChainConfig;
  readonly logger: Logger;
  readonly provider: ChainProvider;
  readonly providerFor: (chainId: number) => ChainProvider;
  readonly redis: Redis;
  readonly queues: ReadonlyMap<number, TxQueue>;
  readonly signerAddress: string;
  readonly routerAddress: string;
  readonly options: PollerOptions;
  /** The chain's poller lease: every write of the cursor, records, head and balances checks it atomically. */
  readonly fence: FenceSource;
}

function buildContext(p: BuildContextParams): PollerContext {
  const { config, chainId, chain, logger, provider, redis, options } = p;
  const store = createTransferStore(redis, config.redisPrefix, { fence: p.fence });
  const lookup = store.get;
  const reconcile = createReconcileSchedule(options.reconcileIntervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS);
  const logs = createLogsSource({
    chainId,
    provider,
    transactionManagerAddress: chain.transactionManagerAddress,
    routerAddress: p.routerAddress,
    redis,
    prefix: config.redisPrefix,
    lookup,
    logger,
    startBlock: options.startBlock,
    maxRangeBlocks: options.maxRangeBlocks,
    onRewind: () => reconcile.requestAll(),
    fence: p.fence,
    beforeCursorSave: options.hooks?.beforeCursorSave,
  });
  const subgraph =
    chain.subgraph.length === 0
      ? undefined
      : createSubgraphSource({
          chainId,
          urls: chain.subgraph,
          routerAddress: p.routerAddress,
          syncBuffer: chain.subgraphSyncBuffer,
          client: createSubgraphClient({ timeoutMs: options.subgraphTimeoutMs }),
          provider,
          lookup,
          watched: () => watchedTransfers(config, store, chainId),
          logger,
        });
  return {
    config,
    chainId,
    chain,
    logger,
    provider,
    redis,
    store,
    balances: createBalanceStore(redis, config.redisPrefix, p.fence),
    fence: p.fence,
    queueFor: (id) => {
      const queue = p.queues.get(id);
      if (!queue) {
        throw new RangeError(`no transaction queue for chain ${id}: not in chainConfig`);
      }
      return queue;
    },
    alertOnce: createAlertOnce(redis, config.redisPrefix, chainId),
    sources: createSourceSelector({ logs, subgraph, logger }),
    routerAddress: p.routerAddress,
    signerAddress: p.signerAddress,
    tolerancePercent: options.tolerancePercent ?? DEFAULT_TOLERANCE_PERCENT,
    readRouterBalance: createRouterBalanceReader({
      config,
      routerAddress: p.routerAddress,
      providers: new Map([[chainId, provider]]),
      logger,
    }),
    poolAssets: poolAssetsOf(config, chainId),
    balanceEveryTicks: Math.max(1, options.balanceEveryTicks ?? DEFAULT_BALANCE_EVERY_TICKS),
    balanceMaxIntervalMs: options.balanceMaxIntervalMs ?? DEFAULT_BALANCE_MAX_INTERVAL_MS,
    reservations: createBidReservations(redis, config.redisPrefix),
    receivingStaleMs: options.receivingStaleMs ?? DEFAULT_RECEIVING_STALE_MS,
    providerFor: p.providerFor,
    reconcile,
    maxRangeBlocks: options.maxRangeBlocks ?? DEFAULT_MAX_RANGE_BLOCKS,
    reconcileSearchBlocks: options.reconcileSearchBlocks ?? DEFAULT_RECONCILE_SEARCH_BLOCKS,
  };
}

/** What the subgraph source must follow besides its open lists (subgraph-source.ts). */
async function watchedTransfers(
  config: RouterConfig,
  store: TransferStore,
  chainId: number,
): Promise<WatchedTransfers> {
  const open = await store.listOpen(chainId);
  const others = Object.values(config.chainConfig).filter((c) => c.chainId !== chainId);
  const lists = await Promise.all(others.map((c) => store.listOpen(c.chainId)));
  const incoming = lists
    .flat()
    .filter((r) => r.txData.sendingChainId === r.chainId && r.txData.receivingChainId === chainId);
  return { open, incoming };
}

/** One producer Queue per configured chain over the poller's single Redis connection. */
function createQueues(config: RouterConfig, redis: Redis, onError: (err: Error) => void): Map<number, TxQueue> {
  const queues = new Map<number, TxQueue>();
  for (const chain of Object.values(config.chainConfig)) {
    const queue: TxQueue = new Queue(txQueueName(chain.chainId), { connection: redis, prefix: config.redisPrefix });
    // The queues share the client, so they re-emit its errors: one throttled log serves all of them.
    queue.on("error", onError);
    queues.set(chain.chainId, queue);
  }
  return queues;
}

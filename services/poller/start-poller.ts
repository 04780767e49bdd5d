import { getAddress } from "ethers";
import type { ChainProvider } from "../../shared/chain/chain-provider";
import { createRouterBalanceReader } from "../../shared/chain/router-balances";
import { poolAssetsOf, poolPartnersOf } from "../../shared/config/pools";
import type { ChainConfig, RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { DEFAULT_TOLERANCE_PERCENT } from "../../shared/protocol/amounts";
import {
  createProcessResources,
  type ProcessResources,
  type ProviderTuning,
} from "../../shared/process/process-resources";
import { pollerLeaseKey, pollerLeaseTermKey } from "../../shared/coordination/keys";
import { createLease, newLeaseOwnerId, type FenceSource, type Lease } from "../../shared/coordination/lease";
import { createSigner } from "../../shared/signer/create-signer";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations } from "../../shared/transfers/bid-reservations";
import { createTransferStore, type TransferStore } from "../../shared/transfers/transfer-store";
import { createAlertOnce } from "./alert-once";
import type { PollerContext } from "./context";
import { ledgerProducerFor, type LedgerProducer } from "../../shared/process/ledger-producer";
import { chainConfigFor } from "../../shared/process/process-env";
import { runPollLoop } from "./loop";
import {
  DEFAULT_POLLER_LEASE_TTL_MS,
  createPollerLeaseKeeper,
  type PollerLeaseKeeper,
  type PollerRole,
} from "./poller-lease";
import { createSourceSelector } from "./source-selector";
import { DEFAULT_MAX_RANGE_BLOCKS, createLogsSource } from "./sources/logs-source";
import {
  DEFAULT_RECONCILE_INTERVAL_MS,
  DEFAULT_RECONCILE_SEARCH_BLOCKS,
  createReconcileSchedule,
} from "./reconcile-schedule";
import { createSubgraphClient } from "./sources/subgraph-client";
import { createSubgraphSource, type WatchedTransfers } from "./sources/subgraph-source";
import type { TickResult } from "./tick";
import { stopOnce } from "../../shared/process/stop-once";
import { settlesWithin } from "../../shared/timing";

/** What a poller runs with where PollerOptions leaves a setting out. */
const POLLER_DEFAULTS = {
  intervalMs: 1_000,
  maxIdleMs: 10_000,
  balanceEveryTicks: 10,
  /** Well inside the auction's 60 s balance freshness bound, so a live poller's balances never count as stale. */
  balanceMaxIntervalMs: 15_000,
  /** Several block times on any chain, and far above the poll interval: a live poller re-stamps its head every poll. */
  receivingStaleMs: 60_000,
  /** For the loop to stop; below run-service's 8 s shutdown bound, with the resources' close after it. */
  closeTimeoutMs: 5_000,
};

export interface PollerOptions {
  readonly intervalMs?: number;
  readonly maxIdleMs?: number;
  /** First block to read when no log cursor is stored (POLLER_START_BLOCK); default head − 100 000. */
  readonly startBlock?: number;
  readonly maxRangeBlocks?: number;
  readonly balanceEveryTicks?: number;
  readonly balanceMaxIntervalMs?: number;
  readonly receivingStaleMs?: number;
  /** Accepted deviation of the locked amount from the bid, percent (docs/protocol.md#receiving-prepare, step 6). */
  readonly tolerancePercent?: number;
  readonly subgraphTimeoutMs?: number;
  /** The signer's address; read from the config's signer (mnemonic or remote) by default. */
  readonly signerAddress?: string;
  readonly providerOptions?: ProviderTuning;
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
  /**
   * Where this router's TransactionManager events are named: by default a producer on the `ledger` queue when the
   * config has a `ledger` section, none without one. Tests pass their own (a real queue) or `null` for none.
   */
  readonly ledger?: LedgerProducer | null;
}

export interface StartPollerParams {
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly chainId: number;
  readonly options?: PollerOptions;
  /**
   * The process's connections when it polls several chains (start-pollers.ts): owned by the caller, who closes
   * them once every chain's poller has stopped. Without them the poller opens its own and closes them on stop.
   */
  readonly resources?: ProcessResources;
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
    return idlePoller(chainId, logger);
  }

  const signerAddress = getAddress(
    options.signerAddress ??
      (await createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl }).getAddress()),
  );
  const routerAddress = getAddress(config.routerContractAddress ?? signerAddress);
  const resources = params.resources ?? createPollerResources(config, logger, options);
  const provider = resources.requireProvider(chainId);
  resources.open(poolPartnersOf(config, chainId));
  const leaseTtlMs = options.leaseTtlMs ?? DEFAULT_POLLER_LEASE_TTL_MS;
  const lease = createLease({
    redis: resources.redis(),
    key: pollerLeaseKey(config.redisPrefix, chainId),
    termKey: pollerLeaseTermKey(config.redisPrefix, chainId),
    ownerId: newLeaseOwnerId(),
    ttlMs: leaseTtlMs,
  });
  const ctx = buildContext({
    config,
    chainId,
    chain,
    logger,
    resources,
    signerAddress,
    routerAddress,
    options,
    fence: lease.current,
  });
  const intervalMs = options.intervalMs ?? POLLER_DEFAULTS.intervalMs;
  const keeper = createPollKeeper(ctx, lease, { ...options, intervalMs, leaseTtlMs });
  logger.info("poller started", {
    at: "poller.start",
    routerAddress,
    signerAddress,
    confirmations: chain.confirmations,
    subgraphs: chain.subgraph.length,
    intervalMs,
    ownerId: lease.ownerId,
    leaseTtlMs,
  });

  const owned = params.resources === undefined ? resources : undefined;
  const stop = createStop(keeper, owned, logger, options.closeTimeoutMs ?? POLLER_DEFAULTS.closeTimeoutMs);
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

/**
 * What a poller opens besides its loop; one chain's poller or every chain's of a process (start-pollers.ts) share
 * one. Other chains' providers serve the reconcile's reads of the other side of a transfer; the queues, every
 * chain's jobs a poller decides. All share one Redis connection.
 */
export function createPollerResources(config: RouterConfig, logger: Logger, options: PollerOptions): ProcessResources {
  return createProcessResources({
    config,
    logger,
    service: "poller",
    redisKind: "worker",
    txQueueConnection: "shared",
    providerOptions: options.providerOptions,
  });
}

/**
 * One loop per lease term: the loop's first iteration runs at once (no initial delay), so a restarted poller or
 * a standby that takes over resumes from the stored cursor within one poll of holding the lease.
 */
function createPollKeeper(
  ctx: PollerContext,
  lease: Lease,
  options: PollerOptions & { readonly intervalMs: number; readonly leaseTtlMs: number },
): PollerLeaseKeeper {
  return createPollerLeaseKeeper({
    lease,
    logger: ctx.logger,
    intervalMs: Math.max(1, Math.floor(options.leaseTtlMs / 4)),
    runTerm: (_fence, signal, firstTick) => {
      // Another poller may have stored and decided since this process last ticked: check everything again.
      ctx.reconcile.requestAll();
      const onTick = (result: TickResult): void => {
        firstTick();
        options.onTick?.(result);
      };
      const maxIdleMs = options.maxIdleMs ?? POLLER_DEFAULTS.maxIdleMs;
      return runPollLoop(ctx, { intervalMs: options.intervalMs, maxIdleMs, onTick }, signal);
    },
  });
}

/**
 * Idempotent: the loop stops at its next safe point (within a bound) and drops the lease, then the resources close
 * (when this poller owns them; shared ones are closed by their owner once every poller on them has stopped).
 */
function createStop(
  keeper: PollerLeaseKeeper,
  resources: ProcessResources | undefined,
  logger: Logger,
  closeTimeoutMs: number,
): () => Promise<void> {
  return stopOnce(async () => {
    if (!(await settlesWithin(keeper.stop(), closeTimeoutMs))) {
      // An RPC or Redis call is stuck; dropping the connections below makes it reject and the loop end.
      logger.warn("poll loop did not stop in time; closing connections under it", { at: "poller.stop" });
    }
    await resources?.close();
  });
}

/** diagnosticMode: nothing runs (no loop, no lifecycle jobs); the process idles until stopped. */
function idlePoller(chainId: number, logger: Logger): RunningPoller {
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

interface BuildContextParams {
  readonly config: RouterConfig;
  readonly chainId: number;
  readonly chain: ChainConfig;
  readonly logger: Logger;
  readonly resources: ProcessResources;
  readonly signerAddress: string;
  readonly routerAddress: string;
  readonly options: PollerOptions;
  /** The chain's poller lease: every write of the cursor, records, head and balances checks it atomically. */
  readonly fence: FenceSource;
}

function buildContext(p: BuildContextParams): PollerContext {
  const { config, chainId, chain, logger, resources, options } = p;
  const provider = resources.requireProvider(chainId);
  const redis = resources.redis();
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
    queueFor: resources.requireTxQueue,
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
    balanceEveryTicks: Math.max(1, options.balanceEveryTicks ?? POLLER_DEFAULTS.balanceEveryTicks),
    balanceMaxIntervalMs: options.balanceMaxIntervalMs ?? POLLER_DEFAULTS.balanceMaxIntervalMs,
    reservations: createBidReservations(redis, config.redisPrefix),
    receivingStaleMs: options.receivingStaleMs ?? POLLER_DEFAULTS.receivingStaleMs,
    providerFor: resources.requireProvider,
    reconcile,
    maxRangeBlocks: options.maxRangeBlocks ?? DEFAULT_MAX_RANGE_BLOCKS,
    reconcileSearchBlocks: options.reconcileSearchBlocks ?? DEFAULT_RECONCILE_SEARCH_BLOCKS,
    ledger: ledgerProducerFor({ config, chainId, redis, logger, adopt: resources.adopt, override: options.ledger }),
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

import { getAddress } from "ethers";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { connectMessaging, routerQueueGroup } from "../../shared/messaging";
import type { Messaging } from "../../shared/messaging/types";
import { createProcessResources, type ProcessResources } from "../../shared/process/process-resources";
import { replicationGuard } from "../../shared/coordination/replication";
import { createSigner } from "../../shared/signer/create-signer";
import type { RouterSigner } from "../../shared/signer/router-signer";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations } from "../../shared/transfers/bid-reservations";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { stopOnce } from "../../shared/process/stop-once";
import { settlesWithin } from "../../shared/timing";
import { createBidReadiness } from "./bid-readiness";
import { serveClaimed } from "./claimed-delivery";
import type { ClaimedDelivery } from "./delivery/types";
import type { AuctionContext } from "./context";
import { createFeeCache, createFeeEstimator, type FeeCache } from "./fee-cache";
import { createInventoryCache, runInventoryRefresher, type InventoryCache } from "./inventory-cache";
import { inventoryPools } from "../../shared/transfers/inventory-reads";
import { createAuctionHandler, DEFAULT_BALANCE_MAX_AGE_MS, type AuctionHandlerOptions } from "./handlers/auction";
import { boundedHandler } from "./bounded-handler";
import { createMetaTxHandler, createMetaTxShed } from "./handlers/metatx";
import { createStatusHandler, createStatusShed } from "./handlers/status";
import { createPriceSources } from "../../shared/protocol/price-sources";
import { refreshChainOnce, refreshPlans, runRefresher, type ChainRefreshPlan } from "./refreshers";
import { createRequestClaims } from "./request-claims";

/** How often prices and gas prices are re-read, how old they may be, and how long start-up waits for the first. */
const REFRESH_DEFAULTS = {
  /** One sequential loop per chain. */
  intervalMs: 15_000,
  /** Several missed refreshes: the chain's RPC is down, so the value is cold. */
  priceMaxAgeMs: 120_000,
  /** Requests needing a value still cold after this are refused. */
  warmupTimeoutMs: 15_000,
};
/**
 * Requests handled at once per process and topic. A relay request holds its slot for up to 90 s (60 s of retried
 * refusals, 30 s waiting for the broadcast), but only for a transfer this router carries; a status request for at
 * most about 1 s (its Redis counts are bounded). Far above honest traffic, which asks once per transfer.
 */
export const REQUEST_BOUNDS = { metatx: 64, status: 64 };
/** Below run-service's 8 s shutdown bound, with the resources' close after it. */
const DRAIN_TIMEOUT_MS = 4_000;
const REFRESHERS_STOP_TIMEOUT_MS = 1_000;

export interface AuctionOptions extends AuctionHandlerOptions {
  readonly refreshIntervalMs?: number;
  /** How often the inventory figures are re-read (inventory-cache.ts INVENTORY_REFRESH_MS by default). */
  readonly inventoryRefreshMs?: number;
  readonly priceMaxAgeMs?: number;
  readonly warmupTimeoutMs?: number;
  readonly nowMs?: () => number;
  /** Tests: an already-connected Messaging instead of connecting with config.messagingUrl/authUrl. */
  readonly messaging?: Messaging;
  /** Tests: the signer; from the config (mnemonic or remote) by default. */
  readonly signer?: RouterSigner;
  /** Relay and status requests handled at once (REQUEST_BOUNDS by default). */
  readonly maxMetaTxInFlight?: number;
  readonly maxStatusInFlight?: number;
  /** Called when the messaging connection closes without stop() (run-service then fails the process). */
  readonly onFatal?: (err: unknown) => void;
}

export interface StartAuctionParams {
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly options?: AuctionOptions;
}

export interface RunningAuction {
  readonly signerAddress: string;
  readonly routerAddress: string;
  readonly queueGroup: string;
  /** Whether the messaging connection is up right now (the auction's /readyz). */
  messagingConnected(): boolean;
  /** Undefined when this instance can bid (every pool value fresh), else what is cold (the auction's /readyz). */
  biddingReady(): Promise<string | undefined>;
  /** Stops taking requests (drains in-flight ones), then closes everything within a bound; idempotent. */
  stop(): Promise<void>;
}

/**
 * Everything one auction process runs (main.ts and the tests both start it here): signer, Redis (balances,
 * reservations, transfer records), producer queues for the relay handler, one provider and cache refresher per
 * chain whose prices the gas fee needs, and messaging. Caches are warmed before the first request is served.
 * Every instance of one router joins the queue group `auction-<signer>`, so NATS hands each request to
 * exactly one of them (docs/protocol.md#deviation-queue-groups); auction requests are also claimed in Redis and watched
 * by every instance, so one whose instance dies mid-request is taken over (claimed-delivery.ts).
 */
export async function startAuction(params: StartAuctionParams): Promise<RunningAuction> {
  const { config, logger } = params;
  const options = params.options ?? {};
  const nowMs = options.nowMs ?? Date.now;
  const signer = options.signer ?? createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl });
  const signerAddress = getAddress(await signer.getAddress());
  const routerAddress = getAddress(config.routerContractAddress ?? signerAddress);
  const queueGroup = routerQueueGroup(signerAddress);

  // Fail fast rather than queue: an auction waiting on Redis is an auction the client has given up on.
  const resources = createProcessResources({
    config,
    logger,
    service: "auction",
    redisKind: "request",
    txQueueConnection: "shared",
  });
  const sources = createPriceSources(config);
  const cache = createFeeCache();
  const plans = refreshPlans(config, sources);
  const refreshAbort = new AbortController();
  let refreshers: Promise<void>[] = [];
  let messaging: Messaging;
  try {
    refreshers = await startRefreshers(
      { plans, resources, cache, config, logger, nowMs, options },
      refreshAbort.signal,
    );
    messaging = options.messaging ?? (await connectAuctionMessaging(config, signer, signerAddress, logger, options));
  } catch (err) {
    refreshAbort.abort();
    await resources.close();
    await Promise.all(refreshers);
    throw err;
  }

  const redis = resources.redis();
  const ctx: AuctionContext = {
    config,
    logger,
    signer,
    signerAddress,
    routerAddress,
    redis,
    messaging,
    transfers: createTransferStore(redis, config.redisPrefix),
    fees: createFeeEstimator({
      cache,
      sources,
      maxAgeMs: options.priceMaxAgeMs ?? REFRESH_DEFAULTS.priceMaxAgeMs,
      nowMs,
    }),
    txQueue: resources.txQueue,
    // A relay chain without prices to refresh gets its provider on first use; none once closing.
    chainProvider: resources.provider,
    nowMs,
  };
  // The pools' inventory targets: the other chains' totals, re-read off the bid path (inventory-cache.ts).
  const inventory = createInventoryCache({
    config,
    reads: {
      config,
      balances: createBalanceStore(redis, config.redisPrefix),
      reservations: createBidReservations(redis, config.redisPrefix),
      transfers: ctx.transfers,
    },
    decimals: (chainId, assetId) => ctx.fees.decimals(chainId, assetId),
    nowMs,
  });
  if (inventoryPools(config).length > 0) {
    refreshers.push(runInventoryRefresher(inventory, logger, refreshAbort.signal, options.inventoryRefreshMs));
  }
  // Relays retried in-process give up (and answer) once stop() begins, so the drain does not wait on them.
  const relayAbort = new AbortController();
  const auctions = await serveRequests(ctx, resources, queueGroup, relayAbort.signal, options, inventory);
  logger.info("auction started", {
    at: "auction.start",
    signerAddress,
    routerAddress,
    queueGroup,
    claimInstance: auctions.instance,
    chains: plans.map((p) => p.chainId),
    cleanUpMode: config.cleanUpMode,
    diagnosticMode: config.diagnosticMode,
  });

  const connected = messaging;
  const stop = createStop({ auctions, messaging, relayAbort, refreshAbort, refreshers, resources, logger });
  return {
    signerAddress,
    routerAddress,
    queueGroup,
    messagingConnected: () => connected.isConnected(),
    biddingReady: createBidReadiness({
      config,
      fees: ctx.fees,
      balances: createBalanceStore(redis, config.redisPrefix),
      balanceMaxAgeMs: options.balanceMaxAgeMs ?? DEFAULT_BALANCE_MAX_AGE_MS,
      nowMs,
    }),
    stop,
  };
}

/** The process's NATS connection, logged in at the auth server with the signer (docs/protocol.md#login). */
function connectAuctionMessaging(
  config: RouterConfig,
  signer: RouterSigner,
  signerAddress: string,
  logger: Logger,
  options: AuctionOptions,
): Promise<Messaging> {
  return connectMessaging({
    servers: config.messagingUrl,
    authUrl: config.authUrl,
    signer,
    logger,
    name: `auction-${signerAddress}-${process.pid}`,
    // Its own settled notices are of no use to an instance (claimed-delivery.ts): without the echo, the server
    // does not wake it once more per request to hand one back.
    noEcho: true,
    onUnexpectedClose: (err) => options.onFatal?.(err ?? new Error("messaging connection closed")),
  });
}

/**
 * Idempotent, in order: relays give up, in-flight auctions finish (drain), messaging unsubscribes and lets the
 * last answers out, then the refreshers stop and the resources close (queues, Redis, providers).
 */
function createStop(p: {
  auctions: ClaimedDelivery;
  messaging: Messaging;
  relayAbort: AbortController;
  refreshAbort: AbortController;
  refreshers: Promise<void>[];
  resources: ProcessResources;
  logger: Logger;
}): () => Promise<void> {
  return stopOnce(async () => {
    p.relayAbort.abort();
    await settlesWithin(p.auctions.stop(), DRAIN_TIMEOUT_MS);
    // Unsubscribe and let in-flight auctions answer before their Redis connection goes away.
    if (!(await settlesWithin(p.messaging.close(), DRAIN_TIMEOUT_MS))) {
      p.logger.warn("messaging did not drain in time; closing anyway", { at: "auction.stop" });
    }
    p.refreshAbort.abort();
    await p.resources.close();
    await settlesWithin(Promise.all(p.refreshers), REFRESHERS_STOP_TIMEOUT_MS);
  });
}

interface RefreshersParams {
  readonly plans: readonly ChainRefreshPlan[];
  readonly resources: ProcessResources;
  readonly cache: FeeCache;
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly nowMs: () => number;
  readonly options: AuctionOptions;
}

/**
 * Warms every planned chain's caches (waiting at most the warm-up bound), then keeps refreshing them in the
 * background; the returned loops end once `signal` aborts.
 */
async function startRefreshers(p: RefreshersParams, signal: AbortSignal): Promise<Promise<void>[]> {
  // One throttled log per failing value, shared by every chain's passes.
  const failureLogs = new Map<string, (err: Error) => void>();
  const chains = p.plans.map((plan) => ({
    plan,
    deps: {
      config: p.config,
      provider: p.resources.requireProvider(plan.chainId),
      cache: p.cache,
      logger: p.logger,
      nowMs: p.nowMs,
      failureLogs,
    },
  }));
  const warm = Promise.all(chains.map(({ plan, deps }) => refreshChainOnce(plan, deps, signal)));
  if (!(await settlesWithin(warm, p.options.warmupTimeoutMs ?? REFRESH_DEFAULTS.warmupTimeoutMs))) {
    p.logger.warn("auction caches not warm yet; serving anyway (requests needing a cold value are refused)", {
      at: "auction.start",
    });
  }
  const intervalMs = p.options.refreshIntervalMs ?? REFRESH_DEFAULTS.intervalMs;
  return chains.map(({ plan, deps }) => runRefresher(plan, deps, intervalMs, signal));
}

/**
 * Subscribes the three request topics in the instance's queue group and resolves once the server has them, so a
 * request published by anyone after start() resolves (and PM2 hears "ready") reaches this instance's group.
 */
async function serveRequests(
  ctx: AuctionContext,
  resources: ProcessResources,
  queueGroup: string,
  relaySignal: AbortSignal,
  options: AuctionOptions,
  inventory: InventoryCache,
): Promise<ClaimedDelivery> {
  const { config, messaging } = ctx;
  // The bid path's claims and reservations on a connection of their own, auto-pipelined: the reservations of
  // requests in flight go out in one socket write per event-loop turn instead of one each (the BullMQ producers
  // stay on `main`). With redis.minReplicas, reservations get yet another, plain one: the replica wait after each
  // reservation blocks the connection it runs on, and must not hold up anything else meanwhile.
  const bidsRedis = resources.redis("bids", { autoPipelining: true });
  const reservationsRedis =
    (config.redisReplication?.minReplicas ?? 0) > 0 ? resources.redis("reservations") : bidsRedis;
  // The queue group picks each auction request's owner, which claims it in Redis; every instance also watches every
  // request and takes over one whose owner dies mid-request (docs/auction.md, "Instances and failures").
  const auctions = serveClaimed("auction", {
    messaging,
    queueGroup,
    claims: createRequestClaims(bidsRedis, config.redisPrefix),
    logger: ctx.logger,
    handler: createAuctionHandler(ctx, {
      reservations: createBidReservations(reservationsRedis, config.redisPrefix),
      replication: replicationGuard(reservationsRedis, config.redisPrefix, config.redisReplication),
      inventory,
      options,
    }),
  });
  // Bounded per process: a requester's flood is shed (metatx answered RELAY_BUSY at once, status not answered).
  const maxMetaTx = options.maxMetaTxInFlight ?? REQUEST_BOUNDS.metatx;
  const maxStatus = options.maxStatusInFlight ?? REQUEST_BOUNDS.status;
  const metatx = createMetaTxHandler(ctx, { signal: relaySignal });
  messaging.serve("metatx", boundedHandler(maxMetaTx, metatx, createMetaTxShed(ctx, maxMetaTx)), { queueGroup });
  const status = createStatusHandler(ctx);
  messaging.serve("status", boundedHandler(maxStatus, status, createStatusShed(ctx, maxStatus)), { queueGroup });
  // A round trip to the server: once it answers, it has registered the subscriptions.
  await messaging.flush();
  return auctions;
}

import { Queue } from "bullmq";
import { getAddress } from "ethers";
import { Redis } from "ioredis";
import { createChainProvider, type ChainProvider } from "../../shared/chain/chain-provider";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import { connectMessaging } from "../../shared/messaging";
import type { Messaging } from "../../shared/messaging/types";
import { redisOptions, txQueueName } from "../../shared/queues";
import { replicationGuard } from "../../shared/queues/replication";
import { createSigner } from "../../shared/signer/create-signer";
import type { RouterSigner } from "../../shared/signer/router-signer";
import { createBidReservations } from "../../shared/transfers/bid-reservations";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import type { AuctionContext } from "./context";
import { createFeeCache, createFeeEstimator } from "./fee-cache";
import { serveClaimed } from "./claimed-delivery";
import { createRequestClaims } from "./request-claims";
import { createAuctionHandler, DEFAULT_BALANCE_MAX_AGE_MS, type AuctionHandlerOptions } from "./handlers/auction";
import { createBidReadiness } from "./bid-readiness";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createMetaTxHandler } from "./handlers/metatx";
import { createStatusHandler } from "./handlers/status";
import { createPriceSources } from "./price-sources";
import { refreshChainOnce, refreshPlans, runRefresher, type RefresherDeps } from "./refreshers";
import { settlesWithin } from "../../shared/timing";

/** Oracle prices and gas prices are re-read this often (one sequential loop per chain). */
export const DEFAULT_REFRESH_INTERVAL_MS = 15_000;
/** A price or gas price older than this is cold: several missed refreshes mean the chain's RPC is down. */
export const DEFAULT_PRICE_MAX_AGE_MS = 120_000;
/** Start-up waits at most this long for the first refresh before serving (requests needing a cold value are refused). */
export const DEFAULT_WARMUP_TIMEOUT_MS = 15_000;
/** Below run-service's 8 s shutdown bound. */
const DRAIN_TIMEOUT_MS = 4_000;
const RESOURCE_CLOSE_TIMEOUT_MS = 1_000;

export interface AuctionOptions extends AuctionHandlerOptions {
  readonly refreshIntervalMs?: number;
  readonly priceMaxAgeMs?: number;
  readonly warmupTimeoutMs?: number;
  readonly nowMs?: () => number;
  /** Tests: an already-connected Messaging instead of connecting with config.messagingUrl/authUrl. */
  readonly messaging?: Messaging;
  /** Tests: the signer; from the config (mnemonic or remote) by default. */
  readonly signer?: RouterSigner;
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
 * exactly one of them (PROTOCOL.md weak point 19); auction requests are also claimed in Redis and watched by every
 * instance, so one whose instance dies mid-request is taken over (claimed-delivery.ts).
 */
export async function startAuction(params: StartAuctionParams): Promise<RunningAuction> {
  const { config } = params;
  const options = params.options ?? {};
  const logger = params.logger;
  const nowMs = options.nowMs ?? Date.now;
  const signer = options.signer ?? createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl });
  const signerAddress = getAddress(await signer.getAddress());
  const routerAddress = getAddress(config.routerContractAddress ?? signerAddress);
  const queueGroup = `auction-${signerAddress}`;

  // Fail fast rather than queue: an auction waiting on Redis is an auction the client has given up on.
  const redis = new Redis({ ...redisOptions(config.redis), maxRetriesPerRequest: 1, connectTimeout: 5_000 });
  const logRedisError = throttledErrorLog(logger, "redis error", { at: "auction.redis" });
  redis.on("error", logRedisError);
  // With redis.minReplicas, reservations get their own connection: the replica wait after each reservation blocks
  // the connection it runs on, and must not hold up balances, transfer records or relay queues meanwhile.
  const reservationsRedis =
    (config.redisReplication?.minReplicas ?? 0) > 0
      ? new Redis({ ...redisOptions(config.redis), maxRetriesPerRequest: 1, connectTimeout: 5_000 })
      : redis;
  if (reservationsRedis !== redis) {
    reservationsRedis.on("error", logRedisError);
  }
  const queues = new Map<number, Queue>();
  for (const chain of Object.values(config.chainConfig)) {
    const queue = new Queue(txQueueName(chain.chainId), { connection: redis, prefix: config.redisPrefix });
    queue.on("error", logRedisError);
    queues.set(chain.chainId, queue);
  }

  const sources = createPriceSources(config);
  const cache = createFeeCache();
  const plans = refreshPlans(config, sources);
  const providers = new Map<number, ChainProvider>();
  for (const plan of plans) {
    const chain = config.chainConfig[String(plan.chainId)];
    providers.set(plan.chainId, createChainProvider({ chainId: plan.chainId, urls: chain.providers, logger }));
  }
  const failureLogs = new Map<string, (err: Error) => void>();
  const depsOf = (chainId: number): RefresherDeps => ({
    config,
    provider: providers.get(chainId) as ChainProvider,
    cache,
    logger,
    nowMs,
    failureLogs,
  });
  const abort = new AbortController();
  let messaging: Messaging | undefined;

  const closeResources = async (): Promise<void> => {
    abort.abort();
    await Promise.all([...queues.values()].map((q) => settlesWithin(q.close(), RESOURCE_CLOSE_TIMEOUT_MS)));
    if (
      !(await settlesWithin(
        redis.quit().catch(() => undefined),
        RESOURCE_CLOSE_TIMEOUT_MS,
      ))
    ) {
      redis.disconnect();
    }
    if (
      reservationsRedis !== redis &&
      !(await settlesWithin(
        reservationsRedis.quit().catch(() => undefined),
        RESOURCE_CLOSE_TIMEOUT_MS,
      ))
    ) {
      reservationsRedis.disconnect();
    }
    for (const provider of providers.values()) {
      provider.destroy();
    }
  };

  let loops: Promise<void>[] = [];
  try {
    const warm = Promise.all(plans.map((plan) => refreshChainOnce(plan, depsOf(plan.chainId), abort.signal)));
    if (!(await settlesWithin(warm, options.warmupTimeoutMs ?? DEFAULT_WARMUP_TIMEOUT_MS))) {
      logger.warn("auction caches not warm yet; serving anyway (requests needing a cold value are refused)", {
        at: "auction.start",
      });
    }
    loops = plans.map((plan) =>
      runRefresher(plan, depsOf(plan.chainId), options.refreshIntervalMs ?? DEFAULT_REFRESH_INTERVAL_MS, abort.signal),
    );
    messaging =
      options.messaging ??
      (await connectMessaging({
        servers: config.messagingUrl,
        authUrl: config.authUrl,
        signer,
        logger,
        name: `auction-${signerAddress}-${process.pid}`,
        onUnexpectedClose: (err) => options.onFatal?.(err ?? new Error("messaging connection closed")),
      }));
  } catch (err) {
    await closeResources();
    await Promise.all(loops);
    throw err;
  }

  const ctx: AuctionContext = {
    config,
    logger,
    signer,
    signerAddress,
    routerAddress,
    redis,
    messaging,
    transfers: createTransferStore(redis, config.redisPrefix),
    fees: createFeeEstimator({ cache, sources, maxAgeMs: options.priceMaxAgeMs ?? DEFAULT_PRICE_MAX_AGE_MS, nowMs }),
    txQueue: (chainId) => queues.get(chainId),
    chainProvider: (chainId) => {
      const chain = config.chainConfig[String(chainId)];
      if (!chain || abort.signal.aborted) {
        return undefined;
      }
      let provider = providers.get(chainId);
      if (!provider) {
        // A relay chain without prices to refresh: its provider is made on first use, closed with the others.
        provider = createChainProvider({ chainId, urls: chain.providers, logger });
        providers.set(chainId, provider);
      }
      return provider;
    },
    nowMs,
  };
  const reservations = createBidReservations(reservationsRedis, config.redisPrefix);
  const replication = replicationGuard(reservationsRedis, config.redisPrefix, config.redisReplication);
  // The queue group picks each auction request's owner, which claims it in Redis; every instance also watches every
  // request and takes over one whose owner dies mid-request (docs/auction.md, "Instances and failures").
  const auctions = serveClaimed("auction", {
    messaging,
    queueGroup,
    claims: createRequestClaims(redis, config.redisPrefix),
    logger,
    handler: createAuctionHandler(ctx, { reservations, replication, options }),
  });
  // Relays retried in-process give up (and answer) once stop() begins, so the drain does not wait on them.
  const relayAbort = new AbortController();
  messaging.serve("metatx", createMetaTxHandler(ctx, { signal: relayAbort.signal }), { queueGroup });
  messaging.serve("status", createStatusHandler(ctx), { queueGroup });
  // A round trip to the server: once it answers, it has registered the subscriptions, so a request published
  // by anyone after start() resolves (and PM2 hears "ready") reaches this instance's queue group.
  await messaging.flush();
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
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      relayAbort.abort();
      await settlesWithin(auctions.stop(), DRAIN_TIMEOUT_MS);
      // Unsubscribe and let in-flight auctions answer before their Redis connection goes away.
      if (!(await settlesWithin(connected.close(), DRAIN_TIMEOUT_MS))) {
        logger.warn("messaging did not drain in time; closing anyway", { at: "auction.stop" });
      }
      await closeResources();
      await settlesWithin(Promise.all(loops), RESOURCE_CLOSE_TIMEOUT_MS);
    })();
    return stopping;
  };
  const biddingReady = createBidReadiness({
    config,
    fees: ctx.fees,
    balances: createBalanceStore(redis, config.redisPrefix),
    balanceMaxAgeMs: options.balanceMaxAgeMs ?? DEFAULT_BALANCE_MAX_AGE_MS,
    nowMs,
  });
  return {
    signerAddress,
    routerAddress,
    queueGroup,
    messagingConnected: () => connected.isConnected(),
    biddingReady,
    stop,
  };
}

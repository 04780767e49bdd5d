import { Redis } from "ioredis";
import type { RouterConfig } from "../config/types";
import { errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import { redisOptions } from "../queues/connection";
import { heartbeatKey } from "../coordination/keys";
import { HEARTBEAT_INTERVAL_MS, processIdOf, writeHeartbeat, type Heartbeat, type LeaseReport } from "./heartbeat";
import { metricsPortFor, type ProcessRole } from "./metrics-port";
import { createReadiness, type Readiness, type ReadinessReport } from "./readiness";
import { labelProcessMetrics, metricsRegistry } from "./router-metrics";
import { startMetricsServer, type MetricsServer } from "./metrics-server";
import { withTimeout } from "../timing";

/** A scrape-time refresher of gauges (Redis reads); bounded so a slow Redis never times out the scrape. */
export type ScrapeHook = () => Promise<void>;
const SCRAPE_HOOK_TIMEOUT_MS = 2_000;

/** What a service's start() may register: readiness conditions, scrape-time gauges, and a Redis for both. */
export interface Observability {
  readonly role: ProcessRole;
  /** The process's (first) chain: its metrics port's slot. */
  readonly chainId?: number;
  readonly instance: number;
  readonly processId: string;
  /** A plain client of the process's own (fail-fast, reconnecting): for readiness and scrape-time reads only. */
  readonly redis: Redis;
  readonly readiness: Readiness;
  onScrape(hook: ScrapeHook): void;
  /** The process's lease role, written with every heartbeat (GET /status shows it). */
  reportLease(report: () => LeaseReport): void;
}

export interface RunningObservability extends Observability {
  /** Marks start() as finished (the "started" readiness check passes from now on). */
  started(): void;
  /** Resolves at the first ready verdict after start, for PM2's `wait_ready`. */
  firstReady(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartObservabilityParams {
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly role: ProcessRole;
  /**
   * The process's chains (CHAIN_ID's list): the first one's slot is its metrics port (a poller of several chains
   * takes its first chain's poller port, which no other poller of that layout uses), all of them its process id.
   */
  readonly chainIds?: readonly number[];
  readonly instance: number;
}

/**
 * Per process, before its service starts: labels and default metrics, the /metrics /healthz /readyz server on
 * the process's own port (shared/metrics/metrics-port.ts), a Redis ping readiness check, and the heartbeat key.
 * A port already taken is logged, not fatal: losing metrics must not take the router down.
 */
export async function startObservability(params: StartObservabilityParams): Promise<RunningObservability> {
  const { config, role, instance } = params;
  const chainIds = params.chainIds ?? [];
  const chainId = chainIds[0];
  labelProcessMetrics({ role, chain: chainId, instance });
  const processId = processIdOf(role, chainIds, instance);
  const startedAtMs = Date.now();
  const redis = failFastRedis(config);

  const readiness = createReadiness();
  let isStarted = false;
  readiness.add("started", () => (isStarted ? undefined : "start() has not finished"));
  readiness.add("redis", async () => {
    const pong = await redis.ping();
    return pong === "PONG" ? undefined : `unexpected ping answer ${pong}`;
  });

  const hooks: ScrapeHook[] = [];
  const server = await startMetricsServerOrLog(params, { processId, readiness, hooks });
  const heartbeat = startHeartbeat(redis, config.redisPrefix, readiness, {
    processId,
    role,
    chainId,
    ...(chainIds.length > 1 ? { chainIds } : {}),
    instance,
    pid: process.pid,
    metricsPort: server?.port,
    startedAtMs,
  });

  return {
    role,
    chainId,
    instance,
    processId,
    redis,
    readiness,
    onScrape: (hook) => {
      hooks.push(hook);
    },
    reportLease: heartbeat.reportLease,
    started: () => {
      isStarted = true;
      heartbeat.beat();
    },
    firstReady: heartbeat.firstReady,
    stop: async () => {
      heartbeat.stop();
      await server?.close();
      // A clean stop shows at once in /status (not alive) instead of after the heartbeat's TTL.
      await withTimeout(redis.del(heartbeatKey(config.redisPrefix, processId)), 500).catch(() => undefined);
      redis.disconnect();
    },
  };
}

/** Fail fast: a readiness probe or a scrape must not queue behind a reconnect. */
function failFastRedis(config: RouterConfig): Redis {
  const redis = new Redis({
    ...redisOptions(config.redis),
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2_000,
  });
  // The service's own clients log Redis trouble already; /readyz reports it.
  redis.on("error", () => undefined);
  return redis;
}

/** The process's metrics server, which runs the scrape hooks before each render; undefined if it cannot listen. */
async function startMetricsServerOrLog(
  params: StartObservabilityParams,
  p: { processId: string; readiness: Readiness; hooks: readonly ScrapeHook[] },
): Promise<MetricsServer | undefined> {
  const { config, logger } = params;
  const registry = metricsRegistry();
  let port: number | undefined;
  try {
    port = metricsPortFor(config, params.role, params.chainIds?.[0], params.instance);
    const server = await startMetricsServer({
      contentType: registry.contentType,
      render: async () => {
        await Promise.all(p.hooks.map((hook) => withTimeout(hook(), SCRAPE_HOOK_TIMEOUT_MS).catch(() => undefined)));
        return registry.metrics();
      },
      readiness: p.readiness,
      host: config.metricsHost,
      port,
    });
    logger.info("metrics server listening", {
      at: "service.metrics",
      host: config.metricsHost,
      port: server.port,
      processId: p.processId,
    });
    return server;
  } catch (err) {
    logger.error("metrics server could not listen; running without /metrics /healthz /readyz", {
      at: "service.metrics",
      host: config.metricsHost,
      port,
      error: errorMessage(err),
    });
    return undefined;
  }
}

interface RunningHeartbeat {
  /** Evaluates readiness now and writes the heartbeat (never throws). */
  beat(): void;
  reportLease(report: () => LeaseReport): void;
  firstReady(): Promise<void>;
  stop(): void;
}

/** The heartbeat key, written every HEARTBEAT_INTERVAL_MS with the last readiness verdict and the lease role. */
function startHeartbeat(
  redis: Redis,
  prefix: string,
  readiness: Readiness,
  identity: Omit<Heartbeat, "atMs" | "ready" | "lease">,
): RunningHeartbeat {
  let leaseReport: (() => LeaseReport) | undefined;
  let last: ReadinessReport = { ready: false, checks: [] };
  let readyWaiters: Array<() => void> = [];
  const beat = async (): Promise<void> => {
    last = await readiness.evaluate();
    if (last.ready && readyWaiters.length > 0) {
      readyWaiters.forEach((resolve) => resolve());
      readyWaiters = [];
    }
    await writeHeartbeat(redis, prefix, {
      ...identity,
      atMs: Date.now(),
      ready: last.ready,
      lease: leaseReport?.(),
    }).catch(() => undefined);
  };
  const timer = setInterval(() => void beat(), HEARTBEAT_INTERVAL_MS);
  timer.unref();
  let fastTimer: NodeJS.Timeout | undefined;

  return {
    beat: () => void beat(),
    reportLease: (report) => {
      leaseReport = report;
    },
    firstReady: () =>
      new Promise<void>((resolve) => {
        if (last.ready) {
          resolve();
          return;
        }
        readyWaiters.push(resolve);
        // Until the first ready verdict, check every second rather than every heartbeat.
        fastTimer ??= setInterval(() => {
          if (readyWaiters.length === 0 && fastTimer) {
            clearInterval(fastTimer);
            fastTimer = undefined;
            return;
          }
          void beat();
        }, 1_000);
        fastTimer.unref();
      }),
    stop: () => {
      clearInterval(timer);
      if (fastTimer) {
        clearInterval(fastTimer);
      }
    },
  };
}

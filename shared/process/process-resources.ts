import type * as BullMQ from "bullmq";
import type { Queue, RedisOptions } from "bullmq";
import { Redis } from "ioredis";
import { createChainProvider, type ChainProvider, type ChainProviderOptions } from "../chain/chain-provider";
import type { RouterConfig } from "../config/types";
import type { Logger } from "../logging/create-logger";
import { throttledErrorLog } from "../logging/throttled-error-log";
import { redisOptions, txQueueName, workerConnection, type TxJobData, type TxJobResult } from "../queues";
import { settlesWithin } from "../timing";

/**
 * The whole close gets this long: graceful first (queues, then QUIT), then whatever has not closed is dropped.
 * Stays well inside run-service's shutdown bound, after the service has drained its own work.
 */
export const DEFAULT_RESOURCES_CLOSE_TIMEOUT_MS = 2_000;

/**
 * How a process's Redis clients behave while Redis is away.
 * - `worker`: commands wait for a reconnect (BullMQ workers and the pollers' loops must not lose a write).
 * - `request`: a command fails after one retry once connected, so a request waiting on Redis is refused fast;
 *   before the first connect commands still queue (a request can arrive before it).
 */
export type RedisKind = "worker" | "request";

/**
 * - `shared`: every chain's queue runs on the process's `main` Redis client (one connection for all producers).
 * - `own`: each queue opens its own connection, so a replica wait (WAIT) on `main` never holds up an enqueue.
 */
export type TxQueueConnection = "shared" | "own";

export type TxQueue = Queue<TxJobData, TxJobResult, string>;

/** Opt-in behaviour of one role's client; the first call for a role decides it. */
export interface RedisRoleOptions {
  /**
   * ioredis `enableAutoPipelining`: the commands issued in one event-loop turn go out in one socket write (a
   * pipeline). For a role that issues many independent commands at once (the auction's reservations under load);
   * never for a role that shares its client with BullMQ or runs blocking commands.
   */
  readonly autoPipelining?: boolean;
}

export type ProviderTuning = Pick<ChainProviderOptions, "maxLagBlocks" | "headRefreshMs" | "requestTimeoutMs">;

export interface ProcessResourcesParams {
  readonly config: RouterConfig;
  readonly logger: Logger;
  /** Prefixes the `at` of the resources' log lines: `<service>.redis`, `<service>.queue`, `<service>.close`. */
  readonly service: string;
  readonly redisKind: RedisKind;
  /** `shared` by default. */
  readonly txQueueConnection?: TxQueueConnection;
  readonly providerOptions?: ProviderTuning;
  readonly closeTimeoutMs?: number;
}

export interface ProcessResources {
  /**
   * The Redis client of a role (`main` by default), made on first use; the same role returns the same client.
   * A role of its own is a connection of its own: for a step that blocks it (a replica wait) or that must not
   * wait behind others (the lease renewal). `options` are the role's; asking again with other options throws.
   */
  redis(role?: string, options?: RedisRoleOptions): Redis;
  /** The transaction queue (producer) of a configured chain, made on first use; undefined otherwise or once closing. */
  txQueue(chainId: number): TxQueue | undefined;
  /** Like txQueue, for a caller that checked the chain is configured: throws when it is not. */
  requireTxQueue(chainId: number): TxQueue;
  /** A configured chain's provider, made on first use (it connects on first read); else undefined, or once closing. */
  provider(chainId: number): ChainProvider | undefined;
  /** Like provider, for a caller that checked the chain is configured: throws when it is not. */
  requireProvider(chainId: number): ChainProvider;
  /**
   * Makes the queue and the provider of each configured chain given now, and starts their connections without
   * waiting for them: the first job that reads another chain then does not pay a connect, which is a Sentinel
   * lookup, a role check and the provider's network detection (about 10 round trips: 4 s at 400 ms between hosts).
   * A failure here is the first use's to report, as it would be without this.
   */
  open(chainIds: readonly number[]): void;
  /** Closes something else this process opened together with the queues (before Redis goes). */
  adopt(name: string, close: () => Promise<unknown>): void;
  /**
   * Closes everything within one deadline: queues and adopted resources, then Redis clients (QUIT), then providers.
   * What has not closed by the deadline is dropped (disconnected) and named in one warning. Idempotent; never rejects.
   */
  close(): Promise<void>;
}

/**
 * BullMQ is loaded with the first queue, not with the process: an auction instance opens one only for a relay or a
 * status request, and BullMQ's modules cost a process ≈ 11 MB of its own memory (USS) once loaded.
 */
export function loadBullMQ(): typeof BullMQ {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- deferred on purpose (see above)
  return require("bullmq") as typeof BullMQ;
}

interface Closable {
  readonly name: string;
  close(): Promise<unknown>;
  /** Drops it at once when close() did not settle in time. */
  drop?(): void;
}

/**
 * Everything a router process opens besides its own work: Redis clients per role, a transaction queue and a
 * provider per chain, and the one bounded close. Each start-*.ts builds one and closes it last, after it has
 * stopped taking work and finished (or parked) what was in flight.
 */
export function createProcessResources(params: ProcessResourcesParams): ProcessResources {
  const { config, logger, service } = params;
  const queueConnection = params.txQueueConnection ?? "shared";
  const logRedisError = throttledErrorLog(logger, "redis error", { at: `${service}.redis` });
  const clients = new Map<string, Redis>();
  const pipelined = new Map<string, boolean>();
  const queues = new Map<number, TxQueue>();
  const providers = new Map<number, ChainProvider>();
  const adopted: Closable[] = [];
  let closing: Promise<void> | undefined;

  const configured = (chainId: number): boolean =>
    Object.prototype.hasOwnProperty.call(config.chainConfig, String(chainId));

  const redis = (role = "main", options?: RedisRoleOptions): Redis => {
    const autoPipelining = options?.autoPipelining ?? false;
    let client = clients.get(role);
    if (!client) {
      client = new Redis({ ...connectionOptions(config, params.redisKind), enableAutoPipelining: autoPipelining });
      client.on("error", logRedisError);
      clients.set(role, client);
      pipelined.set(role, autoPipelining);
    } else if (options !== undefined && pipelined.get(role) !== autoPipelining) {
      // Two parts of a process expecting different behaviour from one client: a wiring bug.
      throw new RangeError(`redis role ${role} was made with autoPipelining ${String(pipelined.get(role))}`);
    }
    return client;
  };

  const openTxQueue = (chainId: number): TxQueue => {
    const name = txQueueName(chainId);
    const { Queue } = loadBullMQ();
    if (queueConnection === "shared") {
      const queue: TxQueue = new Queue(name, { connection: redis(), prefix: config.redisPrefix });
      // The queues share the client, so they re-emit its errors: the client's throttled log serves all of them.
      queue.on("error", logRedisError);
      return queue;
    }
    const queue: TxQueue = new Queue(name, {
      connection: connectionOptions(config, params.redisKind),
      prefix: config.redisPrefix,
    });
    queue.on("error", throttledErrorLog(logger, "queue error", { at: `${service}.queue`, queue: name }));
    return queue;
  };

  // A per-chain handle is made on first use: a chain whose RPC or queue is never needed costs nothing.
  const perChain =
    <T>(made: Map<number, T>, make: (chainId: number) => T) =>
    (chainId: number): T | undefined => {
      if (!configured(chainId) || closing) {
        return undefined;
      }
      let found = made.get(chainId);
      if (found === undefined) {
        found = make(chainId);
        made.set(chainId, found);
      }
      return found;
    };
  const txQueue = perChain(queues, openTxQueue);
  const provider = perChain(providers, (chainId) =>
    createChainProvider({
      chainId,
      urls: config.chainConfig[String(chainId)].providers,
      logger,
      ...params.providerOptions,
    }),
  );

  return {
    redis,
    txQueue,
    requireTxQueue: (chainId) => required(txQueue(chainId), "transaction queue", chainId),
    provider,
    requireProvider: (chainId) => required(provider(chainId), "provider", chainId),
    open: (chainIds) => {
      for (const chainId of chainIds) {
        txQueue(chainId)
          ?.waitUntilReady()
          .catch(() => undefined);
        provider(chainId)
          ?.getBlockNumber()
          .catch(() => undefined);
      }
    },
    adopt: (name, close) => {
      adopted.push({ name, close });
    },
    close: () => {
      closing ??= closeAll({
        first: [...adopted, ...[...queues].map(([chainId, queue]) => queueClosable(chainId, queue, queueConnection))],
        then: [...clients].map(([role, client]) => redisClosable(role, client)),
        providers: [...providers.values()],
        timeoutMs: params.closeTimeoutMs ?? DEFAULT_RESOURCES_CLOSE_TIMEOUT_MS,
        logger,
        at: `${service}.close`,
      });
      return closing;
    },
  };
}

function connectionOptions(config: RouterConfig, kind: RedisKind): RedisOptions {
  if (kind === "worker") {
    return workerConnection(config.redis);
  }
  return { ...redisOptions(config.redis), maxRetriesPerRequest: 1, connectTimeout: 5_000 };
}

function required<T>(value: T | undefined, what: string, chainId: number): T {
  if (value === undefined) {
    // Callers check chainConfig first, so reaching this is a wiring bug (or a use after close), not a client error.
    throw new RangeError(`no ${what} for chain ${chainId}: not in chainConfig, or the process is closing`);
  }
  return value;
}

function queueClosable(chainId: number, queue: TxQueue, connection: TxQueueConnection): Closable {
  return {
    name: `queue ${txQueueName(chainId)}`,
    close: () => queue.close(),
    // A shared client is dropped with the Redis clients; an own connection is dropped here (not awaited: with
    // Redis unreachable BullMQ's disconnect waits for a client that never comes).
    drop: connection === "own" ? () => void queue.disconnect().catch(() => undefined) : undefined,
  };
}

function redisClosable(role: string, client: Redis): Closable {
  return {
    name: `redis ${role}`,
    // QUIT to a client that is not connected would only wait for a reconnect: there is nothing to flush.
    close: async () => (client.status === "ready" ? client.quit() : client.disconnect()),
    drop: () => client.disconnect(),
  };
}

/** Two steps under one deadline: queues go before the connections they may run on, providers last (synchronous). */
async function closeAll(p: {
  first: readonly Closable[];
  then: readonly Closable[];
  providers: readonly ChainProvider[];
  timeoutMs: number;
  logger: Logger;
  at: string;
}): Promise<void> {
  const deadlineMs = Date.now() + p.timeoutMs;
  const notClosed = [...(await closeWithin(p.first, deadlineMs)), ...(await closeWithin(p.then, deadlineMs))];
  for (const provider of p.providers) {
    provider.destroy();
  }
  if (notClosed.length > 0) {
    // With Redis unreachable, QUIT and Queue.close() wait for a reconnect that may never come.
    p.logger.warn("resources did not close in time; dropped", {
      at: p.at,
      timeoutMs: p.timeoutMs,
      resources: notClosed,
    });
  }
}

/** Closes all at once; returns the names of those that had not settled by the deadline (dropped). */
async function closeWithin(closables: readonly Closable[], deadlineMs: number): Promise<string[]> {
  const settled = await Promise.all(
    closables.map((c) =>
      settlesWithin(
        c.close().catch(() => undefined),
        Math.max(0, deadlineMs - Date.now()),
      ),
    ),
  );
  const late = closables.filter((_, i) => !settled[i]);
  for (const c of late) {
    c.drop?.();
  }
  return late.map((c) => c.name);
}

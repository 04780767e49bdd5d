import type { DefaultJobOptions, RedisOptions } from "bullmq";
import type { RedisConnectionConfig, RedisSentinelConfig, RedisTlsOptions } from "../config/types";

/**
 * Where Redis is: a URL (`redis://`, `rediss://`; tests and scripts pass one) or the config's `redis`
 * (`config.redis`: `{ url }` or a Sentinel group). Every client of every process is built from one of these.
 */
export type RedisSource = string | RedisConnectionConfig;

/**
 * Redis connection options for the two roles BullMQ distinguishes. Workers wait out a Redis outage
 * (`maxRetriesPerRequest: null`, as BullMQ requires); producers in the admin API fail fast so a request
 * gets a 503 instead of hanging. Never an ioredis `keyPrefix`: BullMQ's own `prefix` does that job.
 * Typed as BullMQ's RedisOptions (stricter than ioredis's about `retryStrategy`), so the same object fits
 * both a BullMQ class and a plain ioredis client.
 */
export function redisOptions(source: RedisSource): RedisOptions {
  if (typeof source === "string") {
    return redisOptionsFromUrl(source);
  }
  return "url" in source ? redisOptionsFromUrl(source.url) : sentinelOptions(source);
}

/**
 * Delay before the next reconnect after the `times`-th failed attempt, for every client: 100 ms more each time, at
 * most 1 s, so every process is back within about a second of Redis. Set on purpose: for the connections BullMQ
 * makes from options its own default grows exponentially to 20 s, and after a 30 s outage the submitters then
 * came back 8 s after Redis did (test/fault/fault-redis-restart.test.ts).
 */
export function reconnectDelayMs(times: number): number {
  return Math.min(times * 100, 1_000);
}

export function redisOptionsFromUrl(redisUrl: string): RedisOptions {
  const url = new URL(redisUrl);
  const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
  return {
    host: url.hostname,
    port: url.port ? Number(url.port) : 6379,
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: Number.isInteger(db) ? db : 0,
    tls: url.protocol === "rediss:" ? {} : undefined,
    connectionName: undefined,
    retryStrategy: reconnectDelayMs,
  };
}

/**
 * A primary found through Sentinel. ioredis asks the sentinels for the primary on every (re)connect, so after a
 * promotion each client lands on the new primary by itself: a killed or unreachable primary drops the
 * connection, and a primary demoted while reachable refuses writes with READONLY, which reconnects and resends
 * the command (`reconnectOnError`). Not ioredis's `failoverDetector` (a subscription to `+switch-master` on every
 * sentinel): in ioredis 5.11 a client closed soon after a failover leaves the detector's sentinel clients
 * reconnecting forever (test/integration/redis-sentinel.test.ts hung on it), and READONLY covers the same case.
 */
function sentinelOptions(s: RedisSentinelConfig): RedisOptions {
  return {
    sentinels: s.sentinels.map(({ host, port }) => ({ host, port })),
    name: s.name,
    role: "master",
    username: s.username,
    password: s.password,
    sentinelUsername: s.sentinelUsername,
    sentinelPassword: s.sentinelPassword,
    db: s.db ?? 0,
    tls: tlsOptions(s.tls),
    enableTLSForSentinelMode: s.sentinelTls !== undefined && s.sentinelTls !== false,
    sentinelTLS: tlsOptions(s.sentinelTls),
    failoverDetector: false,
    reconnectOnError: reconnectOnReadOnly,
    connectionName: undefined,
    retryStrategy: reconnectDelayMs,
  };
}

/** 2 = reconnect (Sentinel points at the new primary) and resend the failed command. */
export function reconnectOnReadOnly(err: Error): 2 | false {
  return err.message.startsWith("READONLY") ? 2 : false;
}

function tlsOptions(tls: boolean | RedisTlsOptions | undefined): RedisTlsOptions | undefined {
  if (tls === undefined || tls === false) {
    return undefined;
  }
  return tls === true ? {} : { ...tls };
}

export function workerConnection(source: RedisSource): RedisOptions {
  return { ...redisOptions(source), maxRetriesPerRequest: null };
}

export function producerConnection(source: RedisSource): RedisOptions {
  return { ...redisOptions(source), maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5000 };
}

/**
 * Retention must outlast the window in which the same business key can be enqueued again, or a removed job
 * stops counting as a duplicate. Transfers live at most 30 days (the contract's MAX_TIMEOUT).
 */
export const TX_JOB_DEFAULTS: DefaultJobOptions = {
  attempts: 8,
  backoff: { type: "exponential", delay: 2000 },
  removeOnComplete: { age: 31 * 24 * 3600, count: 100000 },
  removeOnFail: { age: 31 * 24 * 3600 },
};

import type { DefaultJobOptions, RedisOptions } from "bullmq";

/**
 * Redis connection options for the two roles BullMQ distinguishes. Workers wait out a Redis outage
 * (`maxRetriesPerRequest: null`, as BullMQ requires); producers in the admin API fail fast so a request
 * gets a 503 instead of hanging. Never an ioredis `keyPrefix`: BullMQ's own `prefix` does that job.
 * Typed as BullMQ's RedisOptions (stricter than ioredis's about `retryStrategy`), so the same object fits
 * both a BullMQ class and a plain ioredis client.
 */
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
  };
}

export function workerConnection(redisUrl: string): RedisOptions {
  return { ...redisOptionsFromUrl(redisUrl), maxRetriesPerRequest: null };
}

export function producerConnection(redisUrl: string): RedisOptions {
  return { ...redisOptionsFromUrl(redisUrl), maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5000 };
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

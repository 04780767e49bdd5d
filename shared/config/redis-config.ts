import { DEFAULT_REDIS_URL } from "./defaults";
import { isRecord } from "./json-shapes";
import type { ParsedConfig } from "./parsed-config";
import type { RedisConnectionConfig, RedisSentinelConfig } from "./types";

/** `redisUrl` or `redis`, never both; Sentinel passes through; Redis Cluster is refused with its reason. */
export function buildRedis(parsed: ParsedConfig, problems: string[]): RedisConnectionConfig | undefined {
  const { redisUrl, redis } = parsed;
  if (redisUrl !== undefined && redis !== undefined) {
    problems.push("redis: set either redisUrl or redis, not both (REDIS_URL in the environment replaces both)");
    return undefined;
  }
  if (redis === undefined) {
    return { url: redisUrl ?? DEFAULT_REDIS_URL };
  }
  if (!isRecord(redis)) {
    return undefined; // the schema said what is wrong with it
  }
  if (redis.cluster !== undefined) {
    problems.push(clusterProblem(parsed.redisPrefix));
    return undefined;
  }
  if (redis.url !== undefined) {
    return { url: redis.url };
  }
  // The replica settings become config.redisReplication, not connection options.
  const { minReplicas: _minReplicas, replicaAckTimeoutMs: _ackTimeout, ...sentinel } = redis;
  return sentinel as RedisSentinelConfig;
}

/**
 * BullMQ runs multi-key Lua scripts over one queue's keys, which Redis Cluster allows only when every key hashes
 * to one slot: the prefix must carry a hash tag. The router's own scripts (lease, nonce, reservations) mix keys
 * of one prefix the same way. Even then the router's clients are plain or Sentinel clients, not cluster clients.
 */
function clusterProblem(prefix: string): string {
  if (!/\{[^{}]+\}/.test(prefix)) {
    return (
      'redis.cluster: Redis Cluster needs redisPrefix with a hash tag such as "{router}" (BullMQ\'s multi-key ' +
      "scripts need every key of a queue in one slot); and this router does not run on Redis Cluster yet: use Sentinel"
    );
  }
  return "redis.cluster: this router does not run on Redis Cluster yet: use redis.sentinels (docs/config.md)";
}

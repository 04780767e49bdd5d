import { ConfigError, loadConfig, type ConfigEnv } from "../../shared/config";
import { redisOptions } from "../../shared/queues/connection";
import { replicationGuard } from "../../shared/coordination/replication";
import type { Redis } from "ioredis";

/** `redis.minReplicas` and `redis.replicaAckTimeoutMs`: defaults, validation, both forms, REDIS_URL (docs/config.md). */

const TM = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const SENTINEL = { sentinels: [{ host: "10.0.0.1", port: 26379 }], name: "router-primary" };

function configWith(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    adminToken: "a-long-enough-admin-token-for-tests",
    mnemonic: "test test test test test test test test test test test junk",
    chainConfig: { "1": { providers: ["http://127.0.0.1:8545"], transactionManagerAddress: TM } },
    swapPools: [],
    ...extra,
  };
}

function problemsOf(raw: unknown, env: ConfigEnv = {}): string[] {
  try {
    loadConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError) {
      return [...err.problems];
    }
    throw err;
  }
  throw new Error("expected the config to be refused");
}

describe("config: redis.minReplicas", () => {
  it("defaults to 0 replicas and a 1000 ms timeout, with redisUrl or no redis at all", () => {
    expect(loadConfig(configWith({}), {}).config.redisReplication).toEqual({ minReplicas: 0, ackTimeoutMs: 1000 });
    expect(loadConfig(configWith({ redisUrl: "redis://10.0.0.9:6379" }), {}).config.redisReplication).toEqual({
      minReplicas: 0,
      ackTimeoutMs: 1000,
    });
  });

  it("takes both keys next to url, leaving the connection as it was", () => {
    const { config } = loadConfig(
      configWith({ redis: { url: "redis://10.0.0.9:6379", minReplicas: 1, replicaAckTimeoutMs: 250 } }),
      {},
    );
    expect(config.redisReplication).toEqual({ minReplicas: 1, ackTimeoutMs: 250 });
    expect(config.redis).toEqual({ url: "redis://10.0.0.9:6379" });
  });

  it("takes both keys next to a Sentinel group, and they never reach the connection options", () => {
    const { config } = loadConfig(configWith({ redis: { ...SENTINEL, minReplicas: 2 } }), {});
    expect(config.redisReplication).toEqual({ minReplicas: 2, ackTimeoutMs: 1000 });
    expect(config.redis).toEqual(SENTINEL);
    expect(redisOptions(config.redis)).not.toHaveProperty("minReplicas");
  });

  it("keeps them when REDIS_URL replaces where Redis is", () => {
    const { config } = loadConfig(configWith({ redis: { ...SENTINEL, minReplicas: 1, replicaAckTimeoutMs: 500 } }), {
      REDIS_URL: "redis://10.0.0.7:6379",
    });
    expect(config.redis).toEqual({ url: "redis://10.0.0.7:6379" });
    expect(config.redisReplication).toEqual({ minReplicas: 1, ackTimeoutMs: 500 });
    const plain = loadConfig(configWith({ redisUrl: "redis://10.0.0.9:6379" }), { REDIS_URL: "redis://10.0.0.7:6379" });
    expect(plain.config.redisUrl).toBe("redis://10.0.0.7:6379");
    expect(plain.config.redisReplication?.minReplicas).toBe(0);
  });

  it.each([
    [{ minReplicas: -1 }, "redis.minReplicas"],
    [{ minReplicas: 1.5 }, "redis.minReplicas"],
    [{ minReplicas: "1" }, "redis.minReplicas"],
    [{ replicaAckTimeoutMs: 0 }, "redis.replicaAckTimeoutMs"],
    [{ replicaAckTimeoutMs: 120_000 }, "redis.replicaAckTimeoutMs"],
  ])("refuses %j", (bad, path) => {
    const problems = problemsOf(configWith({ redis: { url: "redis://10.0.0.9:6379", ...bad } }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^${path.replace(".", "\\.")}: `));
  });

  it("refuses the keys alone (still either url or sentinels)", () => {
    expect(problemsOf(configWith({ redis: { minReplicas: 1 } }))).toEqual([
      "redis: must have either url or sentinels (with name)",
    ]);
  });

  it("builds no replica guard at 0 (the write paths then pay nothing)", () => {
    const fake = {} as Redis;
    expect(replicationGuard(fake, "router", { minReplicas: 0, ackTimeoutMs: 1000 })).toBeUndefined();
    expect(replicationGuard(fake, "router", undefined)).toBeUndefined();
  });
});

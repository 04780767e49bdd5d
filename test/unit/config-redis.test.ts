import { PassThrough } from "node:stream";
import { ConfigError, loadConfig, redactConfig, type ConfigEnv } from "../../shared/config";
import { createLogger } from "../../shared/logging/create-logger";
import { configSecrets } from "../../shared/config/redact-config";
import {
  producerConnection,
  reconnectDelayMs,
  reconnectOnReadOnly,
  redisOptions,
  workerConnection,
} from "../../shared/queues/connection";

/** The `redis` key (Sentinel), its exclusivity with `redisUrl`, the array form of messagingUrl, and redaction. */

const TM = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const MNEMONIC = "test test test test test test test test test test test junk";
const SENTINEL = {
  sentinels: [
    { host: "10.0.0.1", port: 26379 },
    { host: "10.0.0.2", port: 26379 },
  ],
  name: "router-primary",
  password: "redis-node-password-1",
  sentinelPassword: "sentinel-password-2",
  db: 3,
};

function configWith(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    adminToken: "a-long-enough-admin-token-for-tests",
    mnemonic: MNEMONIC,
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

describe("config: redis", () => {
  it("defaults to the local URL, as redisUrl did", () => {
    const { config } = loadConfig(configWith({}), {});
    expect(config.redis).toEqual({ url: "redis://127.0.0.1:6379" });
    expect(config.redisUrl).toBe("redis://127.0.0.1:6379");
  });

  it("takes { url } as the same thing as redisUrl", () => {
    const { config } = loadConfig(configWith({ redis: { url: "rediss://10.0.0.9:6380/1" } }), {});
    expect(config.redis).toEqual({ url: "rediss://10.0.0.9:6380/1" });
    expect(config.redisUrl).toBe("rediss://10.0.0.9:6380/1");
  });

  it("takes a Sentinel group, with no redisUrl", () => {
    const { config } = loadConfig(configWith({ redis: { ...SENTINEL, tls: true } }), {});
    expect(config.redis).toEqual({ ...SENTINEL, tls: true });
    expect(config.redisUrl).toBeUndefined();
  });

  it("refuses redisUrl and redis together, naming both keys", () => {
    const problems = problemsOf(configWith({ redisUrl: "redis://127.0.0.1:6379", redis: SENTINEL }));
    expect(problems).toEqual([expect.stringMatching(/^redis: set either redisUrl or redis, not both/)]);
  });

  it("lets REDIS_URL replace either form", () => {
    const { config } = loadConfig(configWith({ redis: SENTINEL }), { REDIS_URL: "redis://10.0.0.5:6380/2" });
    expect(config.redis).toEqual({ url: "redis://10.0.0.5:6380/2" });
    expect(config.redisUrl).toBe("redis://10.0.0.5:6380/2");
  });

  it.each<[string, unknown, RegExp]>([
    ["neither url nor sentinels", { name: "x" }, /^redis: must have either url or sentinels/],
    ["url and sentinels", { url: "redis://a:1", sentinels: SENTINEL.sentinels }, /^redis: set either url or/],
    ["sentinels without name", { sentinels: SENTINEL.sentinels }, /^redis: sentinels needs name/],
    ["url with a password key", { url: "redis://a:1", password: "pw-not-echoed" }, /^redis: with url, put/],
    ["an empty sentinel list", { sentinels: [], name: "p" }, /^redis\.sentinels: /],
    ["a sentinel without port", { sentinels: [{ host: "a" }], name: "p" }, /^redis\.sentinels\[0\]\.port: /],
    ["a bad port", { sentinels: [{ host: "a", port: 0 }], name: "p" }, /^redis\.sentinels\[0\]\.port: /],
    ["a non-redis url", { url: "http://a:1" }, /^redis\.url: /],
    ["a db out of range", { ...SENTINEL, db: 16 }, /^redis\.db: /],
    ["an unknown key", { ...SENTINEL, sentinelz: 1 }, /^redis\.sentinelz: /],
    ["bad tls", { ...SENTINEL, tls: "yes" }, /^redis\.tls: /],
  ])("refuses %s with a problem naming the key", (_what, redis, expected) => {
    const problems = problemsOf(configWith({ redis }));
    expect(problems).toContainEqual(expect.stringMatching(expected));
    expect(problems.filter((p) => !p.startsWith("redis"))).toEqual([]);
    expect(problems.join("\n")).not.toContain("pw-not-echoed");
  });

  it("refuses Redis Cluster, first for a prefix without a hash tag (BullMQ's rule)", () => {
    const cluster = { cluster: { nodes: [{ host: "10.0.0.1", port: 7000 }] } };
    expect(problemsOf(configWith({ redis: cluster }))).toEqual([
      expect.stringMatching(/^redis\.cluster: Redis Cluster needs redisPrefix with a hash tag/),
    ]);
    expect(problemsOf(configWith({ redis: cluster, redisPrefix: "{router}" }))).toEqual([
      expect.stringMatching(/^redis\.cluster: this router does not run on Redis Cluster yet/),
    ]);
  });
});

describe("config: redis secrets never leave the process", () => {
  const { config } = loadConfig(
    configWith({ redis: { ...SENTINEL, tls: { key: "-----tls-private-key-----", servername: "redis.internal" } } }),
    {},
  );

  it("GET /config's view masks the passwords and the TLS key", () => {
    const text = JSON.stringify(redactConfig(config));
    expect(text).not.toMatch(/redis-node-password-1|sentinel-password-2|tls-private-key/);
    expect(redactConfig(config).redis).toMatchObject({
      name: "router-primary",
      password: "[redacted]",
      sentinelPassword: "[redacted]",
      tls: { key: "[redacted]", servername: "redis.internal" },
    });
  });

  it("the logger cuts them out of any message", () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c.toString("utf8")));
    const logger = createLogger({ level: "info", service: "test", secrets: configSecrets(config), stream });
    logger.error("connect failed: WRONGPASS redis-node-password-1 / sentinel-password-2");
    const text = chunks.join("");
    expect(text).toContain("connect failed");
    expect(text).not.toMatch(/redis-node-password-1|sentinel-password-2/);
  });
});

describe("connection factory: one source, BullMQ's settings per kind of client", () => {
  const sentinel = loadConfig(configWith({ redis: SENTINEL }), {}).config.redis;

  it("builds Sentinel options that follow a promotion by themselves", () => {
    const options = redisOptions(sentinel);
    expect(options).toMatchObject({
      sentinels: SENTINEL.sentinels,
      name: "router-primary",
      role: "master",
      password: "redis-node-password-1",
      sentinelPassword: "sentinel-password-2",
      db: 3,
      failoverDetector: false,
    });
    expect(options.host).toBeUndefined();
    expect(reconnectOnReadOnly(new Error("READONLY You can't write against a read only replica."))).toBe(2);
    expect(reconnectOnReadOnly(new Error("ERR wrong number of arguments"))).toBe(false);
  });

  it("keeps maxRetriesPerRequest null for workers and fail-fast for producers, in both forms", () => {
    for (const source of [sentinel, "redis://127.0.0.1:6390/4"]) {
      expect(workerConnection(source).maxRetriesPerRequest).toBeNull();
      expect(producerConnection(source)).toMatchObject({ maxRetriesPerRequest: 1, enableOfflineQueue: false });
    }
    expect(redisOptions({ url: "rediss://u:p%40ss@10.0.0.1:6390/4" })).toMatchObject({
      host: "10.0.0.1",
      port: 6390,
      username: "u",
      password: "p@ss",
      db: 4,
      tls: {},
    });
  });

  it("reconnects within a second of Redis in every form (BullMQ's own default backs off to 20 s)", () => {
    for (const source of [sentinel, "redis://127.0.0.1:6390/4"]) {
      for (const options of [redisOptions(source), workerConnection(source), producerConnection(source)]) {
        expect(options.retryStrategy).toBe(reconnectDelayMs);
      }
    }
    expect([1, 2, 5, 10, 11, 1_000].map(reconnectDelayMs)).toEqual([100, 200, 500, 1_000, 1_000, 1_000]);
  });
});

describe("config: messagingUrl as an array", () => {
  it("joins the servers into the comma-separated form", () => {
    const servers = ["nats://10.0.0.1:4222", "nats://10.0.0.2:4222", "nats://10.0.0.3:4222"];
    const { config } = loadConfig(configWith({ messagingUrl: servers }), {});
    expect(config.messagingUrl).toBe(servers.join(","));
  });

  it.each<[string, unknown]>([
    ["an empty array", []],
    ["a bad item", ["nats://10.0.0.1:4222", "http://10.0.0.2:4222"]],
    ["a number", 4222],
  ])("refuses %s", (_what, messagingUrl) => {
    expect(problemsOf(configWith({ messagingUrl }))).toEqual([expect.stringMatching(/^messagingUrl(\[\d+\])?: /)]);
  });
});

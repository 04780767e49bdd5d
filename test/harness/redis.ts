import { Redis } from "ioredis";
import { redisServerBinary } from "../../scripts/local/binaries";
import { redisAnswers, redisArgs } from "../../scripts/local/probes";
import { spawnManaged, startOnFreePort, waitForReady, type ManagedProcess } from "./child-process";

export { redisServerBinary };

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** redis://127.0.0.1:port */
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** Append-only persistence (fsync every write) in this directory, as the compose file runs Redis. */
  readonly appendOnlyDir?: string;
  /** Listen on this port instead of a free one (a restart on the port the clients know). */
  readonly port?: number;
}

/** A throwaway redis-server on a free loopback port: no persistence unless asked, and never evicts (BullMQ needs that). */
export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisServer> {
  const host = "127.0.0.1";
  const args = (port: number): string[] => {
    const base = redisArgs(port);
    if (!opts.appendOnlyDir) return base;
    const i = base.indexOf("--appendonly");
    return [
      ...base.slice(0, i),
      ...base.slice(i + 2),
      "--appendonly",
      "yes",
      "--appendfsync",
      "always",
      "--dir",
      opts.appendOnlyDir,
    ];
  };
  let proc: ManagedProcess;
  let port: number;
  if (opts.port === undefined) {
    ({ proc, port } = await startOnFreePort({
      name: "redis-server",
      command: redisServerBinary(),
      args,
      probe: redisAnswers,
    }));
  } else {
    port = opts.port;
    proc = spawnManaged({ name: `redis-server:${port}`, command: redisServerBinary(), args: args(port) });
    await waitForReady(proc, (timeoutMs) => redisAnswers(port, timeoutMs));
  }
  return { host, port, url: `redis://${host}:${port}`, pid: proc.pid, stop: proc.stop };
}

/** What useRedis gives a test file: its server and a client on it, both there once beforeAll has run. */
export interface RedisSuite {
  readonly server: RedisServer;
  readonly redis: Redis;
}

/**
 * A redis-server of the test file's own and one client on it: started in beforeAll, closed in afterAll. Read
 * `server` and `redis` inside tests and hooks (they do not exist before beforeAll).
 */
export function useRedis(): RedisSuite {
  let server: RedisServer | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    await redis?.quit();
    await server?.stop();
  });
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`useRedis: ${what} is read before beforeAll ran`);
    return value;
  };
  return {
    get server() {
      return ready(server, "server");
    },
    get redis() {
      return ready(redis, "redis");
    },
  };
}

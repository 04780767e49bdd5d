import { findBinary, startOnFreePort, tcpExchange } from "./child-process";

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** redis://127.0.0.1:port */
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export function redisServerBinary(): string {
  return findBinary("redis-server", {
    fallbacks: ["/usr/bin/redis-server"],
    missingHint: "redis-server not found: install the Debian package redis-server",
  });
}

/** A throwaway redis-server on a free loopback port: no persistence, and never evicts (BullMQ needs that). */
export async function startRedis(): Promise<RedisServer> {
  const host = "127.0.0.1";
  const { proc, port } = await startOnFreePort({
    name: "redis-server",
    command: redisServerBinary(),
    args: (p) => [
      "--port", String(p),
      "--bind", host,
      "--save", "",
      "--appendonly", "no",
      "--maxmemory-policy", "noeviction",
      "--loglevel", "warning",
    ],
    probe: async (p, timeoutMs) => {
      const reply = await tcpExchange({ port: p, send: "PING\r\n", done: (r) => r.includes("\r\n"), timeoutMs });
      return reply.startsWith("+PONG");
    },
  });
  return { host, port, url: `redis://${host}:${port}`, pid: proc.pid, stop: proc.stop };
}

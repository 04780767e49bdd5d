import { redisServerBinary } from "../../scripts/local/binaries";
import { redisAnswers, redisArgs } from "../../scripts/local/probes";
import { startOnFreePort } from "./child-process";

export { redisServerBinary };

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** redis://127.0.0.1:port */
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** A throwaway redis-server on a free loopback port: no persistence, and never evicts (BullMQ needs that). */
export async function startRedis(): Promise<RedisServer> {
  const host = "127.0.0.1";
  const { proc, port } = await startOnFreePort({
    name: "redis-server",
    command: redisServerBinary(),
    args: redisArgs,
    probe: redisAnswers,
  });
  return { host, port, url: `redis://${host}:${port}`, pid: proc.pid, stop: proc.stop };
}

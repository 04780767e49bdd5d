import type { Redis } from "ioredis";
import type { RedisReplication } from "../config/types";
import { RouterError, errorClass } from "../errors";
import { routerKey } from "./keys";

/**
 * The writes were not acknowledged by enough replicas in time (or the connection that made them was replaced
 * meanwhile, so they may be on a primary that is gone): a failover could lose them, so nothing that relies on
 * them may follow. Retriable, and "not yet": nothing was broadcast, so the caller waits REPLICA_RETRY_MS (a replica
 * outage never uses up a job's attempts); the next run reads what Redis really holds and waits again.
 */
export class ReplicaAckTimeoutError extends errorClass(RouterError, "REDIS_NOT_REPLICATED", "not-yet") {
  constructor(message: string, context: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, { retryAtMs: Date.now() + REPLICA_RETRY_MS, ...context }, options);
  }
}

/** Writes whose replicas did not acknowledge them in time are waited on again this soon. */
export const REPLICA_RETRY_MS = 1_000;

/**
 * Waits on one connection for the writes it made since `mark()`. WAIT counts only the writes of the client
 * that sends it, so the guard must wrap the very client the writes went through; undefined when
 * `minReplicas` is 0 (callers then pay one `if`, no round trip).
 */
export interface ReplicationGuard {
  /** Taken before the writes: which connection of the client they go through. */
  mark(): number;
  /** Throws ReplicaAckTimeoutError unless `minReplicas` replicas have everything the primary held at this call. */
  ensure(since: number): Promise<void>;
}

export function replicationGuard(
  redis: Redis,
  prefix: string,
  settings: RedisReplication | undefined,
): ReplicationGuard | undefined {
  if (settings === undefined || settings.minReplicas <= 0) {
    return undefined;
  }
  const state = connectionState(redis);
  return {
    mark: () => state.epoch,
    ensure: (since) => ensureReplicated(redis, { ...settings, probeKey: replicationProbeKey(prefix), since }),
  };
}

/** The key the probe write sets (tiny, expiring); shared by every process of a deployment. */
export function replicationProbeKey(prefix: string): string {
  return routerKey(prefix, "replication-probe");
}

interface ConnectionState {
  /** Bumped on every (re)connect: a new connection carries none of the old one's writes. */
  epoch: number;
  /** WAITAOF support of the server behind the current connection, asked once per connection. */
  waitAof?: { epoch: number; supported: Promise<boolean> };
}

const states = new WeakMap<Redis, ConnectionState>();

function connectionState(redis: Redis): ConnectionState {
  let state = states.get(redis);
  if (!state) {
    const created: ConnectionState = { epoch: 0 };
    redis.on("connect", () => {
      created.epoch += 1;
    });
    states.set(redis, created);
    state = created;
  }
  return state;
}

/**
 * The one place the router waits for replicas. A probe write first (SET on `probeKey`, pipelined with the wait,
 * one round trip) moves this client's replication offset to the primary's current one, so the wait covers every
 * write the primary held, including ones made by an earlier run or connection (a resumed job's record). Then
 * `WAITAOF 0 n t` where the server has it (Redis ≥ 7.2: replicas fsynced to their AOF), else `WAIT n t`
 * (replicas received it, in memory). A reconnect since `since` (or during the wait) fails it: the writes may
 * have gone to a primary that is no longer there.
 */
export async function ensureReplicated(
  redis: Redis,
  params: RedisReplication & { readonly probeKey: string; readonly since?: number },
): Promise<void> {
  const state = connectionState(redis);
  const since = params.since ?? state.epoch;
  const context = { minReplicas: params.minReplicas, timeoutMs: params.ackTimeoutMs };
  if (state.epoch !== since) {
    throw new ReplicaAckTimeoutError("the Redis connection was replaced since the writes: they may be lost", context);
  }
  const aof = await waitAofSupported(redis, state);
  const pipeline = redis.pipeline().set(params.probeKey, String(Date.now()), "PX", 60_000);
  if (aof) {
    pipeline.call("WAITAOF", 0, params.minReplicas, params.ackTimeoutMs);
  } else {
    pipeline.call("WAIT", params.minReplicas, params.ackTimeoutMs);
  }
  const results = (await pipeline.exec()) ?? [];
  for (const [err] of results) {
    if (err) {
      throw new ReplicaAckTimeoutError(`waiting for replicas failed: ${err.message}`, context, { cause: err });
    }
  }
  const reply = results[1]?.[1];
  const acked = Number(Array.isArray(reply) ? reply[1] : reply);
  if (state.epoch !== since) {
    throw new ReplicaAckTimeoutError("the Redis connection was replaced while waiting for replicas", context);
  }
  if (!(acked >= params.minReplicas)) {
    throw new ReplicaAckTimeoutError(
      `${acked} of ${params.minReplicas} replicas acknowledged the writes within ${params.ackTimeoutMs} ms`,
      { ...context, acked, command: aof ? "WAITAOF" : "WAIT" },
    );
  }
}

/** COMMAND INFO answers [null] for a command the server does not know (Redis < 7.2 for WAITAOF). */
function waitAofSupported(redis: Redis, state: ConnectionState): Promise<boolean> {
  if (state.waitAof?.epoch !== state.epoch) {
    const supported = (redis.call("COMMAND", "INFO", "WAITAOF") as Promise<unknown>).then(
      (reply) => Array.isArray(reply) && reply[0] !== null && reply[0] !== undefined,
      () => false,
    );
    state.waitAof = { epoch: state.epoch, supported };
  }
  return state.waitAof.supported;
}

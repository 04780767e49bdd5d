import type { Redis } from "ioredis";
import { heartbeatKey, heartbeatsKey } from "../coordination/keys";

/** A heartbeat is rewritten this often... */
export const HEARTBEAT_INTERVAL_MS = 5_000;
/** ...and expires after this long: three missed writes mean the process is gone (or cannot reach Redis). */
export const HEARTBEAT_TTL_MS = 15_000;

export interface Heartbeat {
  readonly processId: string;
  readonly role: string;
  /** The process's chain; a poller of several chains names the first here and all of them in chainIds. */
  readonly chainId?: number;
  readonly chainIds?: readonly number[];
  readonly instance: number;
  readonly pid: number;
  readonly metricsPort?: number;
  readonly startedAtMs: number;
  readonly atMs: number;
  /** The process's last readiness verdict. */
  readonly ready: boolean;
  /** For a process under a lease (a chain's pollers): "active" or "standby", and the term while active. */
  readonly lease?: LeaseReport;
}

export interface LeaseReport {
  readonly role: string;
  readonly term?: number;
  /** A poller of several chains holds one lease per chain: each chain's role ("active" above only when all are). */
  readonly chains?: readonly ChainLeaseReport[];
}

export interface ChainLeaseReport {
  readonly chainId: number;
  readonly role: string;
  readonly term?: number;
}

export interface HeartbeatStatus extends Heartbeat {
  /** The TTL key still exists. */
  readonly alive: boolean;
  readonly ageSec: number;
}

/**
 * `<role>[-<chain>]-<instance>`: unique per process of one router, stable across restarts. A poller of several
 * chains joins them with `+` (`poller-1337+1338-0`).
 */
export function processIdOf(role: string, chainId: number | readonly number[] | undefined, instance: number): string {
  const chains = chainId === undefined ? [] : typeof chainId === "number" ? [chainId] : chainId;
  return chains.length === 0 ? `${role}-${instance}` : `${role}-${chains.join("+")}-${instance}`;
}

/** One write: the TTL key (liveness) and the registry hash (so a dead process is still listed). */
export async function writeHeartbeat(redis: Redis, prefix: string, beat: Heartbeat): Promise<void> {
  const json = JSON.stringify(beat);
  await redis
    .multi()
    .set(heartbeatKey(prefix, beat.processId), json, "PX", HEARTBEAT_TTL_MS)
    .hset(heartbeatsKey(prefix), beat.processId, json)
    .exec();
}

/** Every process that ever beat, with whether its heartbeat is still live; sorted by process id. */
export async function readHeartbeats(
  redis: Redis,
  prefix: string,
  nowMs: number = Date.now(),
): Promise<HeartbeatStatus[]> {
  const all = await redis.hgetall(heartbeatsKey(prefix));
  const ids = Object.keys(all).sort();
  if (ids.length === 0) {
    return [];
  }
  const live = await redis.mget(...ids.map((id) => heartbeatKey(prefix, id)));
  const out: HeartbeatStatus[] = [];
  ids.forEach((id, i) => {
    const raw = live[i] ?? all[id];
    let beat: Heartbeat;
    try {
      beat = JSON.parse(raw) as Heartbeat;
    } catch {
      return;
    }
    out.push({ ...beat, alive: live[i] !== null, ageSec: Math.max(0, Math.round((nowMs - beat.atMs) / 100) / 10) });
  });
  return out;
}

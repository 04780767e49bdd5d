import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Redis } from "ioredis";
import { RouterError, errorClass } from "../errors";
import { DELETE_IF_EQUAL } from "../redis/common-scripts";
import { defineScript, reply } from "../redis/script-runner";

/**
 * A fenced lease in Redis: one holder at a time per key, each take of a free lease gets a new, higher term (the
 * fencing token), and every write the holder makes checks the term atomically in its own Lua script (which
 * includes shared/redis/scripts/includes/fence-check.lua). Used by the poller (one active poller per chain) and
 * the submitter (one sender per chain and signer); lease-loop.ts is the renew-or-take loop both run around it.
 */

/**
 * What a fenced write checks, atomically inside its own Lua script: the lease key still holds `value`
 * (`<term>|<ownerId>`). A holder that paused past its TTL finds another value there (or none) and writes nothing.
 */
export interface Fence {
  readonly key: string;
  readonly value: string;
  readonly term: number;
  readonly ownerId: string;
}

/** The fence a store's writes must carry: undefined means "the lease is not held now", so nothing is written. */
export type FenceSource = () => Fence | undefined;

/** A fenced write was refused: this process no longer holds the lease (locally expired, or Redis says so). */
export class LeaseLostError extends errorClass(RouterError, "LEASE_LOST", "retriable") {}

/**
 * The error a refused fenced write throws: LeaseLostError, or a process's own class for its lease (the
 * submitter's SenderLeaseLostError, which its processor turns into "hand the job back to the holder").
 */
export type LeaseLostErrorClass = new (message: string, context: Record<string, unknown>) => RouterError;

/**
 * The lease key and value a store's fenced script checks for one write (shared/redis/scripts/includes/
 * fence-check.lua), and the fence itself when there is one (a store may record
 * the term it wrote under). Without a fence source the write is unfenced (`fallbackKey` fills the KEYS slot);
 * with one that has no fence now, the write is refused before Redis.
 */
export function fenceArgsOf(
  source: FenceSource | undefined,
  fallbackKey: string,
  what: string,
  Lost: LeaseLostErrorClass = LeaseLostError,
): { key: string; value: string; fence?: Fence } {
  if (source === undefined) {
    return { key: fallbackKey, value: "" };
  }
  const fence = source();
  if (fence === undefined) {
    throw new Lost(`the lease is no longer held: ${what} not written`, { what });
  }
  return { key: fence.key, value: fence.value, fence };
}

/** The error for a write the script refused (another term holds the lease, or it lapsed). */
export function fencedOut(
  source: FenceSource | undefined,
  what: string,
  Lost: LeaseLostErrorClass = LeaseLostError,
): RouterError {
  const fence = source?.();
  return new Lost(`the lease moved on: ${what} not written`, {
    what,
    leaseKey: fence?.key,
    term: fence?.term,
    ownerId: fence?.ownerId,
  });
}

/** The lease's scripts (shared/redis/scripts/lease-*.lua; releasing is delete-if-equal.lua). */
const ACQUIRE = defineScript({
  file: "lease-acquire",
  keys: ["lease", "term"],
  args: ["ownerId", "ttlMs"],
  decode: (raw: unknown): { term: number; server: string } => {
    if (!Array.isArray(raw) || raw.length !== 2)
      throw new TypeError(`expected {term, server}, got ${JSON.stringify(raw)}`);
    return { term: reply.number(raw[0]), server: reply.string(raw[1]) };
  },
});

const RESUME = defineScript({
  file: "lease-resume",
  keys: ["lease", "term"],
  args: ["fenceValue", "term", "server", "ttlMs"],
  decode: reply.number,
});

/** lease-resume.lua's answers. */
const RESUME_OUTCOMES: Readonly<Record<number, ResumeOutcome>> = {
  1: "resumed",
  0: "taken",
  [-1]: "term-moved",
  [-2]: "server-changed",
};

/**
 * What a resume of a lapsed lease found: resumed (nobody took it, the same Redis server), or why not: another owner
 * holds it, a term was taken and given up meanwhile, or the server is another one (a failover) or restarted.
 */
export type ResumeOutcome = "resumed" | "taken" | "term-moved" | "server-changed";

const RENEW = defineScript({ file: "lease-renew", keys: ["lease"], args: ["fenceValue", "ttlMs"], decode: reply.flag });

/** Local validity ends this long before the TTL would (clock granularity, Redis round trip). */
const SAFETY_MARGIN_MS = 100;

export interface Lease {
  readonly key: string;
  readonly ownerId: string;
  readonly ttlMs: number;
  /** Takes the lease if it is free (or already ours); the held fence, or undefined when another owner has it. */
  tryAcquire(): Promise<Fence | undefined>;
  /** Extends the TTL; false once the lease is no longer ours (it lapsed or was taken). */
  renew(): Promise<boolean>;
  /**
   * Sets the lapsed lease of `fence`'s term again, same term and owner, only if nobody took it and the Redis server
   * is the one that granted the term (so none of the term's writes can have been lost): "resumed" makes `fence`
   * held and locally valid again; any other outcome writes nothing.
   */
  resume(fence: Fence): Promise<ResumeOutcome>;
  /** Drops the lease if still ours, so a standby takes over at once instead of after the TTL. */
  release(): Promise<void>;
  /** The fence while the lease is held and locally still valid; undefined otherwise (a FenceSource). */
  current(): Fence | undefined;
  /** When the last take, renewal or resume that Redis granted was sent (0 before any). */
  confirmedAtMs(): number;
  /** Forgets the lease locally (after a lost renewal or a stop). */
  drop(): void;
}

/** A process identity: host, pid and a random suffix (a restarted process on the same pid is another owner). */
export function newLeaseOwnerId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
}

/**
 * A lease on `key` whose terms come from `termKey` (INCR, never expires, so a term is never handed out twice).
 * Local validity runs from when the last successful acquire/renew was *sent*, so a process that was paused
 * (SIGSTOP, a long GC) knows on waking that its lease may be someone else's, before Redis tells it.
 */
export function createLease(params: {
  redis: Redis;
  key: string;
  termKey: string;
  ownerId: string;
  ttlMs: number;
}): Lease {
  const { redis, key, termKey, ownerId, ttlMs } = params;
  let held: Fence | undefined;
  let validUntilMs = 0;
  let confirmedAtMs = 0;
  const confirm = (sentAtMs: number): void => {
    confirmedAtMs = sentAtMs;
    validUntilMs = sentAtMs + ttlMs - SAFETY_MARGIN_MS;
  };
  /** The term taken last and the identity of the Redis server that granted it (lease-acquire.lua). */
  let granted: { fence: Fence; server: string } | undefined;
  return {
    key,
    ownerId,
    ttlMs,
    tryAcquire: async () => {
      const sentAtMs = Date.now();
      const { term, server } = await ACQUIRE.run(redis, {
        keys: { lease: key, term: termKey },
        args: { ownerId, ttlMs },
      });
      if (term < 0) {
        held = undefined;
        return undefined;
      }
      held = { key, value: `${term}|${ownerId}`, term, ownerId };
      granted = { fence: held, server };
      confirm(sentAtMs);
      return held;
    },
    renew: async () => {
      const fence = held;
      if (!fence) {
        return false;
      }
      const sentAtMs = Date.now();
      const ok = await RENEW.run(redis, { keys: { lease: key }, args: { fenceValue: fence.value, ttlMs } });
      if (held !== fence) {
        return false;
      }
      if (!ok) {
        held = undefined;
        return false;
      }
      confirm(sentAtMs);
      return true;
    },
    resume: async (fence) => {
      if (granted?.fence.value !== fence.value) {
        return "term-moved";
      }
      const sentAtMs = Date.now();
      const code = await RESUME.run(redis, {
        keys: { lease: key, term: termKey },
        args: { fenceValue: fence.value, term: fence.term, server: granted.server, ttlMs },
      });
      const outcome = RESUME_OUTCOMES[code];
      if (outcome === undefined) throw new TypeError(`lease-resume.lua: unexpected reply ${code}`);
      if (outcome === "resumed") {
        held = fence;
        confirm(sentAtMs);
      }
      return outcome;
    },
    release: async () => {
      const fence = held;
      held = undefined;
      if (fence) {
        await DELETE_IF_EQUAL.run(redis, { keys: { target: key }, args: { expected: fence.value } });
      }
    },
    current: () => (held && Date.now() < validUntilMs ? held : undefined),
    confirmedAtMs: () => confirmedAtMs,
    drop: () => {
      held = undefined;
    },
  };
}

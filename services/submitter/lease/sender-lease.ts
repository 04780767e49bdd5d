import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { senderLeaseKey, senderLeaseTokenKey } from "../../../shared/queues";
import { SenderLeaseLostError } from "../send/errors";

/**
 * What a fenced write checks, atomically inside its own Lua script: the lease key still holds `value`
 * (`<token>|<ownerId>`). A holder that paused past its TTL finds another value there and writes nothing.
 */
export interface Fence {
  readonly key: string;
  readonly value: string;
  readonly token: number;
  readonly ownerId: string;
}

/**
 * Lua lines that refuse a write unless the fence holds; `keyRef`/`valueRef` name the script's KEYS/ARGV slots.
 * An empty fence value means "not fenced" (stores used outside a submitter: tests, tools).
 */
export function fenceCheckLua(keyRef: string, valueRef: string, refused: string): string {
  return `if ${valueRef} ~= "" and redis.call("GET", ${keyRef}) ~= ${valueRef} then return ${refused} end`;
}

/** KEYS/ARGV values of a fence for a script; `fallbackKey` fills the KEYS slot when there is no fence. */
export function fenceArgs(fence: Fence | undefined, fallbackKey: string): { key: string; value: string } {
  return fence ? { key: fence.key, value: fence.value } : { key: fallbackKey, value: "" };
}

/** Returns the token when the lease is (now) ours, -1 when another owner holds it. */
const ACQUIRE_SCRIPT = `
local v = redis.call("GET", KEYS[1])
if v then
  local sep = string.find(v, "|", 1, true)
  if sep and string.sub(v, sep + 1) == ARGV[1] then
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
    return tonumber(string.sub(v, 1, sep - 1))
  end
  return -1
end
local token = redis.call("INCR", KEYS[2])
redis.call("SET", KEYS[1], token .. "|" .. ARGV[1], "PX", ARGV[2])
return token
`;

const RENEW_SCRIPT = `
if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("PEXPIRE", KEYS[1], ARGV[2]) return 1 end
return 0
`;

const RELEASE_SCRIPT = `
if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("DEL", KEYS[1]) return 1 end
return 0
`;

/** Local validity ends this long before the TTL would (clock granularity, Redis round trip). */
const SAFETY_MARGIN_MS = 100;

export interface SenderLease {
  readonly key: string;
  readonly ownerId: string;
  readonly ttlMs: number;
  /** Takes the lease if it is free (or already ours); the held fence, or undefined when another owner has it. */
  tryAcquire(): Promise<Fence | undefined>;
  /** Extends the TTL; false once the lease is no longer ours (it lapsed or was taken). */
  renew(): Promise<boolean>;
  /** Drops the lease if still ours, so a standby takes over at once instead of after the TTL. */
  release(): Promise<void>;
  /** The fence while the lease is held and locally still valid; undefined otherwise. */
  current(): Fence | undefined;
  /** Throws SenderLeaseLostError unless current() is defined: called right before every broadcast. */
  assertHeld(): void;
  /** Forgets the lease locally (after a lost renewal or a stop). */
  drop(): void;
}

/** A process identity: host, pid and a random suffix (a restarted process on the same pid is another owner). */
export function newOwnerId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
}

/**
 * The sender lease of one (chain, signer) (shared/queues/keys.ts senderLeaseKey). Local validity runs from when
 * the last successful acquire/renew was *sent*, so a process that was paused (SIGSTOP, a long GC) knows on
 * waking that its lease may be someone else's, before Redis tells it.
 */
export function createSenderLease(params: {
  redis: Redis;
  prefix: string;
  chainId: number;
  signerAddress: string;
  ownerId: string;
  ttlMs: number;
}): SenderLease {
  const { redis, ownerId, ttlMs } = params;
  const key = senderLeaseKey(params.prefix, params.chainId, params.signerAddress);
  const tokenKey = senderLeaseTokenKey(params.prefix, params.chainId, params.signerAddress);
  let held: Fence | undefined;
  let validUntilMs = 0;
  const current = (): Fence | undefined => (held && Date.now() < validUntilMs ? held : undefined);
  return {
    key,
    ownerId,
    ttlMs,
    tryAcquire: async () => {
      const sentAtMs = Date.now();
      const token = Number(await redis.eval(ACQUIRE_SCRIPT, 2, key, tokenKey, ownerId, ttlMs));
      if (token < 0) {
        held = undefined;
        return undefined;
      }
      held = { key, value: `${token}|${ownerId}`, token, ownerId };
      validUntilMs = sentAtMs + ttlMs - SAFETY_MARGIN_MS;
      return held;
    },
    renew: async () => {
      const fence = held;
      if (!fence) {
        return false;
      }
      const sentAtMs = Date.now();
      const ok = Number(await redis.eval(RENEW_SCRIPT, 1, key, fence.value, ttlMs)) === 1;
      if (held !== fence) {
        return false;
      }
      if (!ok) {
        held = undefined;
        return false;
      }
      validUntilMs = sentAtMs + ttlMs - SAFETY_MARGIN_MS;
      return true;
    },
    release: async () => {
      const fence = held;
      held = undefined;
      if (fence) {
        await redis.eval(RELEASE_SCRIPT, 1, key, fence.value);
      }
    },
    current,
    assertHeld: () => {
      if (!current()) {
        throw new SenderLeaseLostError("this process no longer holds the sender lease: nothing is sent", {
          key,
          ownerId,
        });
      }
    },
    drop: () => {
      held = undefined;
    },
  };
}

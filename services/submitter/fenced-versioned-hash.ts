import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Redis } from "ioredis";
import { defineScript, reply, type ScriptClient } from "../../shared/redis/script-runner";
import { senderFenceArgs, senderFencedOut, type FenceSource } from "./send/fence";

/**
 * A Redis hash of JSON entries (one field per entry id) with a numeric watermark beside them, written only by
 * the holder of the chain's sender lease. The holder keeps a mirror of it in memory, read once per lease term: a
 * change is decided against the mirror (no I/O between deciding and sending the write, so the process's changes
 * are serialised without a lock) and written as a compare-and-set on the hash's `version` token, fenced by the
 * sender lease in the same Lua step. The writes of one process are pipelined on one connection, each expecting
 * the token the previous one set; a write refused for any reason (another writer, the guard, the fence) leaves
 * the mirror behind Redis, so it is read again and the refused changes are decided again. Two decisions cannot
 * both be written against the same state, and a deposed holder writes nothing. A change costs one round trip
 * whatever the number of entries (the whole-hash read per change with a shared numeric version made every write
 * invalidate every other job's snapshot: 500 jobs in flight retried 23 times each, 4.8 tx/s).
 * The policy on top (what an entry means, what a change is) is the caller's: liquidity-in-flight.ts.
 */
export interface VersionedHashState<T> {
  /** The lease term it was read in: a new term reads the hash again (another holder may have written). */
  readonly term: number;
  version: string;
  /** -1 until a change sets it. */
  watermark: number;
  readonly entries: Map<string, T>;
}

export interface VersionedHashChange<T, R> {
  readonly set?: readonly T[];
  readonly del?: readonly string[];
  readonly watermark?: number;
  /** Write only if this key does not exist. */
  readonly guardAbsent?: string;
  readonly result: R;
}

/** Returned by a decision whose inputs (prepared before it) are out of date: they are prepared again. */
export const AGAIN = Symbol("again");

export interface FencedVersionedHash<T> {
  /**
   * One change: `prepare` does the I/O the decision needs (outside the serialised part), `decide` computes the
   * change from the mirror synchronously, the mirror takes it at once (the next change decides on it) and the
   * write goes out behind the earlier ones. A refused write drops the mirror; the change is prepared and decided
   * again, up to `maxTries` times.
   */
  mutate<P, R>(
    prepare: (state: VersionedHashState<T>) => Promise<P>,
    decide: (state: VersionedHashState<T>, term: number, prepared: P) => VersionedHashChange<T, R> | typeof AGAIN,
  ): Promise<R>;
  /** The hash as Redis has it now, outside any term (term 0). */
  read(): Promise<VersionedHashState<T>>;
  /** Drops the mirror: a new term, whose first change reads the hash again. */
  forget(): void;
}

const VERSION = "version";

/**
 * One change of the hash (shared/redis/scripts/versioned-hash-write.lua): 1, or -1 on a version conflict, -2 when
 * the fence does not hold, -3 when the guard refused.
 */
const WRITE = defineScript({
  file: "versioned-hash-write",
  keys: ["hash", "lease", "guard"],
  args: ["fenceValue", "expected", "version", "ttlMs", "guardMode", "watermarkField", "watermark", "setCount"],
  restArgs: true,
  decode: reply.number,
});

export function createFencedVersionedHash<T>(params: {
  redis: Pick<Redis, "hgetall"> & ScriptClient;
  key: string;
  /** The field an entry is stored under. */
  idOf: (entry: T) => string;
  /** The field the watermark is stored under (never an entry id). */
  watermarkField: string;
  /** Refreshed by every write. */
  ttlMs: number;
  maxTries: number;
  /** What the hash holds, for the fence's error ("liquidity holds"). */
  what: string;
  /** Thrown after `maxTries` refused writes. */
  busy: () => Error;
  /** The sender lease (send/fence.ts); without it writes are not fenced. */
  fence?: FenceSource;
}): FencedVersionedHash<T> {
  const { redis, key, idOf } = params;
  /** Unique per instance, so no other writer can set a token this instance expects. */
  const writer = randomUUID();
  let writes = 0;
  /** The mirror of the current term (being read, or read); undefined after a refused write. */
  let loaded: { readonly term: number; readonly mirror: Promise<VersionedHashState<T>> } | undefined;

  const read = (term: number): Promise<VersionedHashState<T>> => readHash<T>(redis, key, params.watermarkField, term);

  /** The mirror for `term`: read from Redis once per term, and again after any refused write. */
  const mirrorOf = (term: number): { readonly term: number; readonly mirror: Promise<VersionedHashState<T>> } => {
    if (loaded === undefined || loaded.term !== term) {
      const entry = { term, mirror: read(term) };
      loaded = entry;
      entry.mirror.catch(() => {
        if (loaded === entry) loaded = undefined;
      });
    }
    return loaded;
  };

  const mutate = async <P, R>(
    prepare: (state: VersionedHashState<T>) => Promise<P>,
    decide: (state: VersionedHashState<T>, term: number, prepared: P) => VersionedHashChange<T, R> | typeof AGAIN,
  ): Promise<R> => {
    for (let tries = 1; tries <= params.maxTries; tries += 1) {
      const entry = mirrorOf(senderFenceArgs(params.fence, key, params.what).fence?.term ?? 0);
      const m = await entry.mirror;
      const prepared = await prepare(m);
      // From here to the eval call nothing awaits: no other change of this process is decided in between.
      const fenced = senderFenceArgs(params.fence, key, params.what);
      if (loaded !== entry || (fenced.fence?.term ?? 0) !== m.term) {
        continue;
      }
      const change = decide(m, m.term, prepared);
      if (change === AGAIN) {
        continue;
      }
      const sets = (change.set ?? []).map((e) => [idOf(e), JSON.stringify(e)]);
      const del = change.del ?? [];
      if (sets.length === 0 && del.length === 0 && change.watermark === undefined) {
        return change.result;
      }
      const expected = m.version;
      writes += 1;
      m.version = `${writer}:${writes}`;
      for (const e of change.set ?? []) m.entries.set(idOf(e), e);
      for (const id of del) m.entries.delete(id);
      m.watermark = change.watermark ?? m.watermark;
      const found = await WRITE.run(redis, {
        keys: { hash: key, lease: fenced.key, guard: change.guardAbsent ?? key },
        args: {
          fenceValue: fenced.value,
          expected,
          version: m.version,
          ttlMs: params.ttlMs,
          guardMode: change.guardAbsent ? "absent" : "",
          watermarkField: params.watermarkField,
          watermark: change.watermark === undefined ? "" : String(change.watermark),
          setCount: sets.length,
        },
        restArgs: [...sets.flat(), ...del],
      }).catch((err: unknown) => {
        // Applied or not, unknown: the next change reads the hash again.
        if (loaded === entry) loaded = undefined;
        throw err;
      });
      if (found === 1) {
        return change.result;
      }
      // Refused: Redis no longer matches the mirror (nor any write queued behind this one).
      if (loaded === entry) {
        loaded = undefined;
      }
      if (found === -2) {
        throw senderFencedOut(params.fence, params.what);
      }
      if (found === -1) {
        // Another writer: spread out before reading again.
        await sleep(Math.floor(Math.random() * 5));
      }
    }
    throw params.busy();
  };

  return {
    mutate,
    read: () => read(0),
    forget: () => {
      loaded = undefined;
    },
  };
}

/** The whole hash: its entries (every field but the version and the watermark), version token and watermark. */
async function readHash<T>(
  redis: Pick<Redis, "hgetall">,
  key: string,
  watermarkField: string,
  term: number,
): Promise<VersionedHashState<T>> {
  const raw = await redis.hgetall(key);
  const entries = new Map<string, T>();
  for (const [field, value] of Object.entries(raw)) {
    if (field !== VERSION && field !== watermarkField) {
      entries.set(field, JSON.parse(value) as T);
    }
  }
  return { term, version: raw[VERSION] ?? "", watermark: Number(raw[watermarkField] ?? -1), entries };
}

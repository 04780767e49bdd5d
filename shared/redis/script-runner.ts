import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import { RouterError, errorClass } from "../errors";
import { loadScript, sourceOf, type LoadedScript } from "./script-loader";

/**
 * The one way the router runs a Redis script. Each script is a file under shared/redis/scripts/ (its header
 * names every key and argument slot) and one definition here: key names in KEYS order, argument names in ARGV
 * order, and a decoder that turns the reply into a named value. Callers pass keys and arguments by name, so a
 * slot can never shift silently. The first call on a client is EVAL (which caches the body), later ones EVALSHA
 * (the body travels once per server, not on every call), and EVAL again when the server answers NOSCRIPT (a
 * restart, a failover to a replica that never saw it, SCRIPT FLUSH). A Redis error raised inside a script is
 * rethrown as RedisScriptError naming the .lua file and line, through the include expansion (script-loader.ts).
 */

export type ScriptArg = string | number;

export interface ScriptDefinition<K extends string, A extends string, R, OK extends string, OA extends string> {
  /** The file under shared/redis/scripts, without `.lua`. */
  readonly file: string;
  /** The names of the KEYS, in order. */
  readonly keys: readonly K[];
  /** The names of the ARGV, in order. */
  readonly args: readonly A[];
  /** KEYS after `keys`, given all or none (a call without them leaves them out). */
  readonly optionalKeys?: readonly OK[];
  /** ARGV after `args`, given all or none. */
  readonly optionalArgs?: readonly OA[];
  /** The script reads KEYS/ARGV beyond the named ones (a list of claims, field/value pairs): `rest*` in a call. */
  readonly restKeys?: boolean;
  readonly restArgs?: boolean;
  /** The reply as a named value; throws on a reply the script cannot give. */
  readonly decode: (reply: unknown) => R;
  /** Where the file is read from (tests); shared/redis/scripts by default. */
  readonly dir?: string;
}

export interface ScriptCall<K extends string, A extends string, OK extends string, OA extends string> {
  readonly keys: Readonly<Record<K, string>> & Partial<Readonly<Record<OK, string>>>;
  readonly args: Readonly<Record<A, ScriptArg>> & Partial<Readonly<Record<OA, ScriptArg>>>;
  readonly restKeys?: readonly string[];
  readonly restArgs?: readonly ScriptArg[];
}

/** The commands the runner needs: stores that take a narrowed client pass at least these. */
export type ScriptClient = Pick<Redis, "evalsha" | "eval">;

export interface RedisScript<K extends string, A extends string, R, OK extends string, OA extends string> {
  readonly file: string;
  readonly sha: string;
  readonly loaded: LoadedScript;
  run(redis: ScriptClient, call: ScriptCall<K, A, OK, OA>): Promise<R>;
}

/**
 * A Redis error raised inside a script, with the .lua file and line it points at. Retriable, as any unknown Redis
 * error: a retry reads Redis again (a foreign write may have been the cause).
 */
export class RedisScriptError extends errorClass(RouterError, "REDIS_SCRIPT_ERROR", "retriable") {}

/** A script's slot names as its definition gives them: what its .lua header must name, in order. */
export interface DefinedSlots {
  readonly file: string;
  readonly dir?: string;
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

const defined: DefinedSlots[] = [];

/** Every script defined so far in this process (the test that holds each .lua header to its definition). */
export function definedScripts(): readonly DefinedSlots[] {
  return defined;
}

/** Reads the script's file (once, here) and returns its runner. Throws at load time when the file is missing. */
export function defineScript<
  K extends string,
  A extends string,
  R,
  OK extends string = never,
  OA extends string = never,
>(def: ScriptDefinition<K, A, R, OK, OA>): RedisScript<K, A, R, OK, OA> {
  const loaded = loadScript(def.file, def.dir);
  const sha = createHash("sha1").update(loaded.lua).digest("hex");
  /** Clients this script's body was sent on once; later calls on them are EVALSHA. */
  const sent = new WeakSet<ScriptClient>();
  defined.push({
    file: loaded.file,
    dir: def.dir,
    keys: [...def.keys, ...(def.optionalKeys ?? [])],
    args: [...def.args, ...(def.optionalArgs ?? [])],
  });
  const flatten = (call: ScriptCall<K, A, OK, OA>): { keys: string[]; args: ScriptArg[] } => {
    const keys = named(def.file, "key", def.keys, def.optionalKeys, call.keys as Record<string, string | undefined>);
    const args = named(def.file, "arg", def.args, def.optionalArgs, call.args as Record<string, ScriptArg | undefined>);
    if (call.restKeys !== undefined) {
      if (!def.restKeys) throw new TypeError(`Redis script ${def.file}: takes no keys beyond the named ones`);
      keys.push(...call.restKeys);
    }
    if (call.restArgs !== undefined) {
      if (!def.restArgs) throw new TypeError(`Redis script ${def.file}: takes no args beyond the named ones`);
      args.push(...call.restArgs);
    }
    return { keys, args };
  };
  return {
    file: def.file,
    sha,
    loaded,
    run: async (redis, call) => {
      const { keys, args } = flatten(call);
      let reply: unknown;
      try {
        if (!sent.has(redis)) {
          // The first call on a client sends the body (EVAL caches it): a new process's first burst of calls,
          // pipelined, would otherwise all come back NOSCRIPT and be sent again out of their order.
          sent.add(redis);
          reply = await redis.eval(loaded.lua, keys.length, ...keys, ...args);
        } else {
          try {
            reply = await redis.evalsha(sha, keys.length, ...keys, ...args);
          } catch (err) {
            if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
            // Calls made until this EVAL is back send the body too, rather than each meeting NOSCRIPT first.
            sent.delete(redis);
            reply = await redis.eval(loaded.lua, keys.length, ...keys, ...args);
            sent.add(redis);
          }
        }
      } catch (err) {
        throw located(loaded, sha, err);
      }
      return def.decode(reply);
    },
  };
}

/** The values of the named slots, in order; optional ones up to the first left out (all or none). */
function named<T>(
  file: string,
  kind: "key" | "arg",
  required: readonly string[],
  optional: readonly string[] | undefined,
  given: Readonly<Record<string, T | undefined>>,
): T[] {
  const out: T[] = [];
  for (const name of required) {
    const value = given[name];
    if (value === undefined) throw new TypeError(`Redis script ${file}: ${kind} ${name} is missing`);
    out.push(value);
  }
  if (optional !== undefined && optional.length > 0) {
    const present = optional.filter((name) => given[name] !== undefined);
    if (present.length > 0 && present.length < optional.length) {
      const missing = optional.filter((name) => given[name] === undefined);
      throw new TypeError(`Redis script ${file}: optional ${kind}s go all or none, missing ${missing.join(", ")}`);
    }
    for (const name of present) out.push(given[name] as T);
  }
  return out;
}

/** A Redis error naming `user_script:<n>` becomes a RedisScriptError at the .lua file and line; others pass. */
function located(loaded: LoadedScript, sha: string, err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const line = /user_script:(\d+)/.exec(err.message);
  if (line === null) return err;
  const at = sourceOf(loaded, Number(line[1])) ?? `${loaded.file} (line ${line[1]} past its end)`;
  return new RedisScriptError(
    `Redis script ${loaded.file} failed at ${at}: ${err.message}`,
    { script: loaded.file, at, sha },
    {
      cause: err,
    },
  );
}

/** Decoders for the usual replies. */
export const reply = {
  /** An integer reply. */
  number: (raw: unknown): number => {
    if (typeof raw !== "number") throw new TypeError(`expected an integer reply, got ${JSON.stringify(raw)}`);
    return raw;
  },
  /** 1 → true, 0 → false. */
  flag: (raw: unknown): boolean => {
    if (raw !== 0 && raw !== 1) throw new TypeError(`expected a 0/1 reply, got ${JSON.stringify(raw)}`);
    return raw === 1;
  },
  /** A bulk string reply. */
  string: (raw: unknown): string => {
    if (typeof raw !== "string") throw new TypeError(`expected a string reply, got ${JSON.stringify(raw)}`);
    return raw;
  },
  /** A flat `{name1, value1, name2, value2, …}` array reply as an object. */
  fields: (raw: unknown): Record<string, string> => {
    if (!Array.isArray(raw) || raw.length % 2 !== 0) {
      throw new TypeError(`expected a name/value array reply, got ${JSON.stringify(raw)}`);
    }
    const out: Record<string, string> = {};
    for (let i = 0; i < raw.length; i += 2) out[String(raw[i])] = String(raw[i + 1]);
    return out;
  },
};

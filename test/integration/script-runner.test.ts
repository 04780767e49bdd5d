import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SCRIPTS_DIR, loadScript } from "../../shared/redis/script-loader";
import { RedisScriptError, defineScript, definedScripts, reply } from "../../shared/redis/script-runner";
// Every module that defines a script, so that definedScripts() lists them all.
import "../../services/admin/operations/content-claim";
import "../../services/auction/request-claims";
import "../../services/poller/reconcile-request";
import "../../services/poller/sources/log-cursor";
import "../../services/submitter/lease/release-orphaned-jobs";
import "../../services/submitter/liquidity-in-flight";
import "../../services/submitter/send/nonce-store";
import "../../services/submitter/send/tx-record";
import "../../shared/coordination/lease";
import "../../shared/coordination/transfer-decision";
import "../../shared/transfers/balance-store";
import "../../shared/transfers/transfer-store";
import { LAPSE_STEP_MS } from "../../shared/transfers/bid-reservations";
import { useRedis } from "../harness/redis";

const suite = useRedis();

/** Scripts of this test's own, in a folder laid out like shared/redis/scripts. */
const dir = mkdtempSync(join(tmpdir(), "script-runner-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, "includes"));
writeFileSync(
  join(dir, "includes", "pairs.lua"),
  [
    "-- line 1 of the include",
    "local function pairsOf(names, values)",
    "  local out = {}",
    "  for i, name in ipairs(names) do out[#out + 1] = name; out[#out + 1] = values[i] end",
    "  return out",
    "end",
    "local function failInInclude() return redis.call('INCR', KEYS[1]) end",
  ].join("\n"),
);
writeFileSync(
  join(dir, "echo.lua"),
  [
    "-- KEYS[1] first, KEYS[2] second, ARGV[1] a, ARGV[2] b",
    '--- @include "pairs"',
    "redis.call('SET', KEYS[1], ARGV[1])",
    "return pairsOf({'k1', 'k2', 'a1', 'a2', 'rest'}, {KEYS[1], KEYS[2], ARGV[1], ARGV[2], tostring(#ARGV - 2)})",
  ].join("\n"),
);
writeFileSync(
  join(dir, "fails.lua"),
  [
    "-- ARGV[1]: 'body' fails on line 5 of this file, 'include' on line 7 of includes/pairs.lua",
    '--- @include "pairs"',
    "local mode = ARGV[1]",
    "if mode == 'body' then",
    "  return redis.call('INCR', KEYS[1])",
    "end",
    "return failInInclude()",
  ].join("\n"),
);

const ECHO = defineScript({
  file: "echo",
  dir,
  keys: ["first", "second"],
  args: ["a", "b"],
  restArgs: true,
  decode: reply.fields,
});
const FAILS = defineScript({ file: "fails", dir, keys: ["target"], args: ["mode"], decode: reply.number });

async function evalshaCalls(): Promise<number> {
  const stats = (await suite.redis.info("commandstats")) as string;
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

describe("script runner (real Redis)", () => {
  it("passes keys and args by name in the definition's order, and decodes the reply", async () => {
    const out = await ECHO.run(suite.redis, {
      keys: { second: "k:two", first: "k:one" },
      args: { b: 7, a: "x" },
      restArgs: ["r1", "r2", "r3"],
    });
    expect(out).toEqual({ k1: "k:one", k2: "k:two", a1: "x", a2: "7", rest: "3" });
    expect(await suite.redis.get("k:one")).toBe("x");
  });

  it("refuses a call missing a named key or arg before Redis, naming it", async () => {
    await expect(ECHO.run(suite.redis, { keys: { first: "k" } as never, args: { a: "1", b: "2" } })).rejects.toThrow(
      "Redis script echo: key second is missing",
    );
    await expect(
      FAILS.run(suite.redis, { keys: { target: "t" }, args: { mode: "x" }, restArgs: ["y"] }),
    ).rejects.toThrow("takes no args beyond the named ones");
  });

  it("takes optional trailing keys or args all or none", async () => {
    const optional = defineScript({
      file: "echo",
      dir,
      keys: ["first", "second"],
      args: ["a"],
      optionalArgs: ["b", "c"],
      decode: reply.fields,
    });
    await expect(
      optional.run(suite.redis, { keys: { first: "o:1", second: "o:2" }, args: { a: "1", b: "2" } }),
    ).rejects.toThrow("Redis script echo: optional args go all or none, missing c");
    const out = await optional.run(suite.redis, {
      keys: { first: "o:1", second: "o:2" },
      args: { a: "1", b: "2", c: "3" },
    });
    expect(out).toMatchObject({ a1: "1", a2: "2", rest: "1" });
  });

  it("runs EVALSHA, and loads the script again after SCRIPT FLUSH (NOSCRIPT)", async () => {
    const call = { keys: { first: "f:1", second: "f:2" }, args: { a: "1", b: "2" } };
    await ECHO.run(suite.redis, call);
    const before = await evalshaCalls();
    await ECHO.run(suite.redis, call);
    expect(await evalshaCalls()).toBe(before + 1);

    await suite.redis.script("FLUSH");
    expect(await suite.redis.script("EXISTS", ECHO.sha)).toEqual([0]);
    expect((await ECHO.run(suite.redis, call)).a1).toBe("1");
    // The fallback's EVAL cached the body: the next call is an EVALSHA that finds it.
    expect(await suite.redis.script("EXISTS", ECHO.sha)).toEqual([1]);
    const afterReload = await evalshaCalls();
    await ECHO.run(suite.redis, call);
    expect(await evalshaCalls()).toBe(afterReload + 1);
  });

  it("names the .lua file and line of an error, through the include expansion", async () => {
    await suite.redis.set("not-a-number", "abc");
    const inBody = await FAILS.run(suite.redis, { keys: { target: "not-a-number" }, args: { mode: "body" } }).catch(
      (err: unknown) => err,
    );
    expect(inBody).toBeInstanceOf(RedisScriptError);
    expect((inBody as Error).message).toContain("failed at shared/redis/scripts/fails.lua:5:");
    expect((inBody as Error).message).toContain("not an integer");
    expect((inBody as RedisScriptError).context).toMatchObject({
      script: "fails.lua",
      at: "shared/redis/scripts/fails.lua:5",
    });

    const inInclude = await FAILS.run(suite.redis, {
      keys: { target: "not-a-number" },
      args: { mode: "include" },
    }).catch((err: unknown) => err);
    expect((inInclude as Error).message).toContain("failed at shared/redis/scripts/includes/pairs.lua:7:");
  });

  it("rejects a reply its decoder does not accept (a definition that does not match its script)", async () => {
    const bad = defineScript({ file: "echo", dir, keys: ["first", "second"], args: ["a", "b"], decode: reply.number });
    await expect(bad.run(suite.redis, { keys: { first: "a", second: "b" }, args: { a: "1", b: "2" } })).rejects.toThrow(
      TypeError,
    );
  });
});

describe("the shipped scripts (shared/redis/scripts)", () => {
  const files = readdirSync(SCRIPTS_DIR).filter((f) => f.endsWith(".lua"));

  it("every one loads with its includes and compiles in Redis", async () => {
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const { lua } = loadScript(file.replace(/\.lua$/, ""));
      await expect(suite.redis.script("LOAD", lua)).resolves.toMatch(/^[0-9a-f]{40}$/);
    }
  });

  it("every one's header names each KEYS[i] and ARGV[i] it reads, and says what it returns and why it is atomic", () => {
    for (const file of files) {
      const text = readFileSync(join(SCRIPTS_DIR, file), "utf8");
      const header = /^--\[\[([\s\S]*?)\]\]/.exec(text)?.[1] ?? "";
      expect({ file, returns: /Returns/.test(header), atomic: /Atomic because/.test(header) }).toEqual({
        file,
        returns: true,
        atomic: true,
      });
      const body = text.slice(text.indexOf("]]"));
      for (const [slot] of body.matchAll(/\b(KEYS|ARGV)\[\d+\]/g)) {
        expect({
          file,
          slot,
          named: new RegExp(`^\\s+${slot.replace(/[[\]]/g, "\\$&")}\\s+\\w`, "m").test(header),
        }).toEqual({ file, slot, named: true });
      }
    }
  });

  it("every one is defined in TypeScript with the key and arg names its header gives, in its order", () => {
    const shipped = definedScripts().filter((d) => d.dir === undefined);
    expect(new Set(shipped.map((d) => d.file))).toEqual(new Set(files));
    for (const d of shipped) {
      const text = readFileSync(join(SCRIPTS_DIR, d.file), "utf8");
      const header = /^--\[\[([\s\S]*?)\]\]/.exec(text)?.[1] ?? "";
      const named = (slot: "KEYS" | "ARGV"): string[] =>
        [...header.matchAll(new RegExp(`^\\s+${slot}\\[(\\d+)\\]\\s+(\\w+)`, "gm"))].map(([, , name]) => name);
      expect({ file: d.file, keys: named("KEYS"), args: named("ARGV") }).toEqual({
        file: d.file,
        keys: d.keys,
        args: d.args,
      });
    }
  });

  it("rounds lapse times with the step bid-reservations.ts uses", () => {
    const promises = readFileSync(join(SCRIPTS_DIR, "includes", "promises.lua"), "utf8");
    expect(Number(/local LAPSE_STEP_MS = (\d+)/.exec(promises)?.[1])).toBe(LAPSE_STEP_MS);
  });
});

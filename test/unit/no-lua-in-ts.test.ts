import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { REPO_ROOT as ROOT, tsFilesUnder } from "../harness/source-files";

/**
 * Every Redis script is a .lua file under shared/redis/scripts, run through shared/redis/script-runner.ts: no
 * TypeScript file under services/ or shared/ holds a script body or runs one on its own (a body in a TS string
 * cannot be read as Lua, its errors name lines of no file, and each such site grew its own way of running it).
 */

const RUNNER = "shared/redis/script-runner.ts";

/** What only a Lua script body (or a hand-run script) contains; the ioredis `redis.call("CMD", …)` method is not one. */
const LUA_SIGNS: ReadonlyArray<[string, RegExp]> = [
  ["KEYS[i]/ARGV[i]", /\b(KEYS|ARGV)\[/],
  ["a Lua comparison (~=)", /\s~=\s/],
  ["redis.call('…') or redis.pcall(", /redis\.call\('|redis\.pcall\(/],
  ["a Lua local function", /\blocal function\b/],
  ["`then return`", /\bthen\s+return\b/],
];
const RUNS_SCRIPT: ReadonlyArray<[string, RegExp]> = [
  [".eval(", /\.eval\(/],
  ["evalsha", /\bevalsha\b/i],
  ["defineCommand", /\bdefineCommand\b/],
];

function findings(path: string, text: string): string[] {
  const signs = path === RUNNER ? LUA_SIGNS : [...LUA_SIGNS, ...RUNS_SCRIPT];
  return text
    .split("\n")
    .flatMap((line, i) => signs.filter(([, re]) => re.test(line)).map(([what]) => `${path}:${i + 1}: ${what}`));
}

describe("no Redis script in TypeScript", () => {
  const files = ["services", "shared"].flatMap(tsFilesUnder);

  it("reads the tree it checks", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain(RUNNER);
  });

  it("finds no script body and no script run outside the runner under services/ and shared/", () => {
    const found = files.flatMap((file) =>
      findings(relative(ROOT, join(ROOT, file)), readFileSync(join(ROOT, file), "utf8")),
    );
    expect(found).toEqual([]);
  });

  it("flags a script body (the checker itself can fail)", () => {
    const body = [
      "const SCRIPT = `",
      'if ARGV[1] ~= "" and redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end',
      "return redis.call('SET', KEYS[1], ARGV[2])",
      "`;",
      "await redis.eval(SCRIPT, 1, key, a, b);",
    ].join("\n");
    expect(findings("services/x.ts", body).length).toBeGreaterThanOrEqual(4);
    // An ioredis command sent with the generic method is not a script.
    expect(findings("shared/y.ts", 'await (redis.call("COMMAND", "INFO", "WAITAOF") as Promise<unknown>);')).toEqual(
      [],
    );
  });
});

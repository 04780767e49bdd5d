/**
 * `npm run build`: compiles into dist.next/ and only then swaps it in for dist/, so the code PM2 serves from dist/
 * stays whole for the whole compile (about 20 s): a process restarting meanwhile starts the old code, one
 * restarting after the swap the new. The swap is two renames (dist → dist.old, dist.next → dist), apart by well
 * under a millisecond unless the build is descheduled between them (a process PM2 restarts in that window fails
 * to start and is restarted after its restart delay). A failed compile leaves dist/ as it was. Plain JavaScript: it runs before anything is built.
 * tsc copies no .lua file: the Redis scripts (the .lua files under shared/redis/scripts, read by shared/redis/script-loader.ts
 * next to its compiled self) are copied into dist.next/ before the swap, so a dist/ never lacks its scripts.
 */
const { spawn } = require("node:child_process");
const { cpSync, existsSync, renameSync, rmSync, statSync } = require("node:fs");
const { join, resolve } = require("node:path");

const root = resolve(__dirname, "..");
const dist = join(root, "dist");
const next = join(root, "dist.next");
const old = join(root, "dist.old");
/** Non-TypeScript files the processes read at run time, copied as they are. */
const LUA_SCRIPTS = join("shared", "redis", "scripts");

/** A line every few seconds while tsc runs: on a loaded machine the compile takes 20 s and more. */
const PROGRESS_MS = 5_000;

const startedAtMs = Date.now();
const seconds = () => ((Date.now() - startedAtMs) / 1000).toFixed(0);
rmSync(next, { recursive: true, force: true });
process.stdout.write("build: compiling TypeScript into dist.next/ (tsc, about 20 s)\n");
const tsc = spawn(
  process.execPath,
  [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", next],
  {
    cwd: root,
    stdio: "inherit",
  },
);
const ticker = setInterval(() => process.stdout.write(`build: … still compiling (${seconds()} s)\n`), PROGRESS_MS);
tsc.on("close", (status) => {
  clearInterval(ticker);
  if (status !== 0) {
    rmSync(next, { recursive: true, force: true });
    process.stderr.write("build: tsc failed; dist/ is unchanged\n");
    process.exitCode = status ?? 1;
    return;
  }
  cpSync(join(root, LUA_SCRIPTS), join(next, LUA_SCRIPTS), {
    recursive: true,
    filter: (from) => statSync(from).isDirectory() || from.endsWith(".lua"),
  });
  rmSync(old, { recursive: true, force: true });
  if (existsSync(dist)) renameSync(dist, old);
  renameSync(next, dist);
  // Running processes keep what they already loaded; nothing they still need is read from dist.old.
  rmSync(old, { recursive: true, force: true });
  process.stdout.write(`build: dist/ swapped in (${seconds()} s)\n`);
});

/**
 * `npm run build`: compiles into dist.next/ and only then swaps it in for dist/, so the code PM2 serves from dist/
 * stays whole for the whole compile (about 20 s): a process restarting meanwhile starts the old code, one
 * restarting after the swap the new. The swap is two renames (dist → dist.old, dist.next → dist), apart by well
 * under a millisecond. A failed compile leaves dist/ as it was. Plain JavaScript: it runs before anything is built.
 */
const { spawnSync } = require("node:child_process");
const { existsSync, renameSync, rmSync } = require("node:fs");
const { join, resolve } = require("node:path");

const root = resolve(__dirname, "..");
const dist = join(root, "dist");
const next = join(root, "dist.next");
const old = join(root, "dist.old");

rmSync(next, { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", next],
  { cwd: root, stdio: "inherit" },
);
if (tsc.status !== 0) {
  rmSync(next, { recursive: true, force: true });
  process.stderr.write("build: tsc failed; dist/ is unchanged\n");
  process.exit(tsc.status ?? 1);
}
rmSync(old, { recursive: true, force: true });
if (existsSync(dist)) renameSync(dist, old);
renameSync(next, dist);
// Running processes keep what they already loaded; nothing they still need is read from dist.old.
rmSync(old, { recursive: true, force: true });

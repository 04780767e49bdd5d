/**
 * `npm run bench:compare -- <commit> [rounds]`: the hot-path benches of a commit against the working tree, in one
 * run on the same machine (absolute figures on a shared machine drift; their ratio much less). The commit is
 * checked out in a temporary git worktree (`git worktree add --detach`) and built there; its node_modules is a
 * symlink to this tree's when both lockfiles resolve the same packages (name, version, integrity), otherwise
 * `npm ci` installs it. Then `bench:submitter` and `bench:auction` run for each tree, alternating, `rounds` times
 * (default 1; which tree goes first alternates between rounds), and each figure is printed side by side with its
 * ratio working tree / commit (the median over rounds). The worktree is removed at the end.
 * The benches' env applies to both trees; BENCH_CONFIRMATIONS defaults to 1 and BENCH_BASELINE_JOBS to 1 here
 * (the figures compared are the pipelined ones). Figures come from each bench's JSON last line (support.ts
 * printFigures), or, for a commit older than it, from its text lines.
 * Each run is a process group of its own (the bench, its redis-server and anvils on fresh ports, its own Redis
 * prefix): when it ends the whole group is killed, so nothing of one run outlives it into the next, and a run
 * that has not ended within BENCH_COMPARE_RUN_TIMEOUT_MS (default 10 min; a run takes 1-3 min) is killed and
 * fails the comparison, naming the bench, the tree and the tail of its output, instead of hanging.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { figuresIn, runBench, type BenchFigures } from "./support";

const ROOT = resolve(__dirname, "../..");
/** A run that takes longer has hung (a run takes 1-3 min on the 2-core build machine, 03879b6's submitter included). */
const RUN_TIMEOUT_MS = positiveMs(process.env.BENCH_COMPARE_RUN_TIMEOUT_MS, 10 * 60_000);
const BENCHES = ["submitter", "auction"] as const;
type BenchName = (typeof BENCHES)[number];

interface Tree {
  readonly label: string;
  readonly dir: string;
}

async function main(): Promise<number> {
  const [commitArg, roundsArg] = process.argv.slice(2);
  if (!commitArg) throw new Error("usage: npm run bench:compare -- <commit> [rounds]");
  const rounds = Number(roundsArg ?? 1);
  if (!Number.isSafeInteger(rounds) || rounds < 1) throw new Error(`rounds must be a positive integer: ${roundsArg}`);
  const commit = git(ROOT, ["rev-parse", "--verify", `${commitArg}^{commit}`]).trim();
  const dir = mkdtempSync(join(tmpdir(), "bench-compare-"));
  try {
    git(ROOT, ["worktree", "add", "--detach", dir, commit]);
    installModules(dir);
    log(`building ${commit.slice(0, 7)} in ${dir}`);
    // The commit's own build where it has one: tsc alone copies no Redis .lua file, and a tree whose scripts live
    // in shared/redis/scripts then stops at start naming the missing file.
    const ownBuild = join(dir, "scripts/build.js");
    if (existsSync(ownBuild)) run(process.execPath, [ownBuild], dir);
    else run(process.execPath, [join(dir, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"], dir);
    const trees: Tree[] = [
      { label: commit.slice(0, 7), dir },
      { label: "working tree", dir: ROOT },
    ];
    const results = new Map<BenchName, Map<string, BenchFigures[]>>();
    for (let round = 0; round < rounds; round += 1) {
      for (const bench of BENCHES) {
        for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
          log(`round ${round + 1}/${rounds}: bench:${bench} of ${tree.label}`);
          const figures = await runBenchOf(tree, bench);
          const byTree = results.get(bench) ?? new Map<string, BenchFigures[]>();
          byTree.set(tree.label, [...(byTree.get(tree.label) ?? []), figures]);
          results.set(bench, byTree);
        }
      }
    }
    process.stdout.write(table(trees, results, rounds));
    return 0;
  } finally {
    spawnSync("git", ["worktree", "remove", "--force", dir], { cwd: ROOT });
    rmSync(dir, { recursive: true, force: true });
    spawnSync("git", ["worktree", "prune"], { cwd: ROOT });
  }
}

/** This tree's node_modules when the commit's lockfile resolves the same packages, else a clean install there. */
function installModules(dir: string): void {
  const ours = resolvedPackages(join(ROOT, "package-lock.json"));
  const theirs = resolvedPackages(join(dir, "package-lock.json"));
  if (ours !== undefined && ours === theirs && existsSync(join(ROOT, "node_modules"))) {
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
    log("same resolved packages: node_modules linked");
    return;
  }
  log("the lockfiles resolve different packages: npm ci in the worktree");
  run("npm", ["ci", "--no-audit", "--no-fund"], dir);
}

/** The lockfile's installed packages (path, version, integrity), dev flags aside: what node_modules holds. */
function resolvedPackages(lockfile: string): string | undefined {
  if (!existsSync(lockfile)) return undefined;
  const lock = JSON.parse(readFileSync(lockfile, "utf8")) as {
    packages?: Record<string, { version?: string; integrity?: string; resolved?: string }>;
  };
  return Object.entries(lock.packages ?? {})
    .filter(([path]) => path !== "")
    .map(([path, p]) => `${path}@${p.version ?? ""}#${p.integrity ?? p.resolved ?? ""}`)
    .sort()
    .join("\n");
}

async function runBenchOf(tree: Tree, bench: BenchName): Promise<BenchFigures> {
  const env = {
    ...process.env,
    BENCH_CONFIRMATIONS: process.env.BENCH_CONFIRMATIONS ?? "1",
    BENCH_BASELINE_JOBS: process.env.BENCH_BASELINE_JOBS ?? "1",
  };
  // detached: the bench leads a process group of its own, with the servers it spawns, so killGroup reaches them.
  const child = spawn(process.execPath, [join(tree.dir, "dist/bench", `${bench}.js`)], {
    cwd: tree.dir,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const killGroup = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // The group is gone already.
    }
  };
  // compare itself stopped (Ctrl-C, a CI timeout): the run must not outlive it.
  const onSignal = (signal: NodeJS.Signals): void => {
    killGroup();
    process.kill(process.pid, signal);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    log(`bench:${bench} of ${tree.label} still running after ${RUN_TIMEOUT_MS / 1000} s: killing its process group`);
    killGroup();
  }, RUN_TIMEOUT_MS);
  const code = await new Promise<number | null>((done) => child.on("close", done));
  clearTimeout(timer);
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  // Whatever the bench left behind (a server it had not stopped) goes with it.
  killGroup();
  if (timedOut) {
    throw new Error(
      `bench:${bench} of ${tree.label} did not finish within ${RUN_TIMEOUT_MS / 1000} s (BENCH_COMPARE_RUN_TIMEOUT_MS); ` +
        `its output ended with:\n${output.slice(-2000)}`,
    );
  }
  if (code !== 0) throw new Error(`bench:${bench} of ${tree.label} exited ${code}:\n${output.slice(-2000)}`);
  const figures = figuresIn(output, bench) ?? TEXT_FIGURES[bench](output);
  if (Object.keys(figures).length === 0) throw new Error(`bench:${bench} of ${tree.label}: no figures in its output`);
  return figures;
}

/** Figures from the text lines of benches older than their JSON line (same names as the JSON figures). */
const TEXT_FIGURES: Record<BenchName, (output: string) => BenchFigures> = {
  submitter: (output) => {
    const out: Record<string, number> = {};
    let at = "";
    for (const line of output.split("\n")) {
      const scenario = /^confirmations (\d+)$/.exec(line.trim());
      if (scenario) at = `confirmations ${scenario[1]}`;
      const chain = /chain (\d+): ([\d.]+) tx\/s.*enqueue→broadcast p50 (\d+) ms.*enqueue→confirmed p50 (\d+) ms/.exec(
        line,
      );
      if (chain) {
        out[`${at}, chain ${chain[1]}: tx/s`] = Number(chain[2]);
        out[`${at}, chain ${chain[1]}: enqueue→broadcast p50 ms`] = Number(chain[3]);
        out[`${at}, chain ${chain[1]}: enqueue→confirmed p50 ms`] = Number(chain[4]);
      }
      const nonce = /nonce errors: (\d+)/.exec(line);
      if (nonce) out[`${at}: nonce errors`] = Number(nonce[1]);
      const loop = /event-loop delay .*p99 (\d+) ms, max (\d+) ms/.exec(line);
      if (loop) {
        out[`${at}: event-loop delay p99 ms`] = Number(loop[1]);
        out[`${at}: event-loop delay max ms`] = Number(loop[2]);
      }
    }
    return out;
  },
  auction: (output) => {
    const out: Record<string, number> = {};
    for (const line of output.split("\n")) {
      const phase = /^(.+?) \(\d+\): p50 ([\d.]+) ms, p99 ([\d.]+) ms, .*?(\d+) bids\/s, CPU ([\d.]+) ms\/bid/.exec(
        line,
      );
      if (phase) {
        out[`${phase[1]}: p50 ms`] = Number(phase[2]);
        out[`${phase[1]}: p99 ms`] = Number(phase[3]);
        out[`${phase[1]}: bids/s`] = Number(phase[4]);
        out[`${phase[1]}: CPU ms/bid`] = Number(phase[5]);
      }
      const cpu = /^CPU per bid over all measured phases[^:]*: ([\d.]+) ms/.exec(line);
      if (cpu) out["all phases: CPU ms/bid"] = Number(cpu[1]);
    }
    return out;
  },
};

function table(trees: readonly Tree[], results: Map<BenchName, Map<string, BenchFigures[]>>, rounds: number): string {
  const [base, ours] = trees;
  const lines = [`\nbench:compare, ${rounds} round(s), median per figure; ratio = working tree / ${base.label}`];
  for (const [bench, byTree] of results) {
    lines.push(`\nbench:${bench}`);
    const baseRuns = byTree.get(base.label) ?? [];
    const ourRuns = byTree.get(ours.label) ?? [];
    const names = [...new Set([...baseRuns, ...ourRuns].flatMap((f) => Object.keys(f)))];
    const width = Math.max(...names.map((n) => n.length));
    lines.push(`  ${"".padEnd(width)}  ${base.label.padStart(12)}  ${ours.label.padStart(12)}  ratio`);
    for (const name of names) {
      const b = median(baseRuns.map((f) => f[name]));
      const o = median(ourRuns.map((f) => f[name]));
      const ratio = b !== undefined && o !== undefined && b !== 0 ? `×${(o / b).toFixed(2)}` : "";
      lines.push(`  ${name.padEnd(width)}  ${fmt(b).padStart(12)}  ${fmt(o).padStart(12)}  ${ratio}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

function median(values: ReadonlyArray<number | undefined>): number | undefined {
  const known = values.filter((v): v is number => v !== undefined && Number.isFinite(v)).sort((a, b) => a - b);
  if (known.length === 0) return undefined;
  const mid = Math.floor(known.length / 2);
  return known.length % 2 === 1 ? known[mid] : (known[mid - 1] + known[mid]) / 2;
}

function fmt(value: number | undefined): string {
  return value === undefined ? "—" : Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function git(cwd: string, args: string[]): string {
  const result = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`git ${args.join(" ")}: ${result.stderr.trim()}`);
  return result.stdout;
}

function run(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${result.status} in ${cwd}`);
}

function positiveMs(raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`BENCH_COMPARE_RUN_TIMEOUT_MS must be a positive integer (ms), got ${JSON.stringify(raw)}`);
  }
  return value;
}

function log(line: string): void {
  process.stderr.write(`[bench:compare] ${line}\n`);
}

runBench("bench:compare", main);

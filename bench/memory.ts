/**
 * `npm run bench:memory`: the memory of each router process on the stack of `npm run local` (anvil ×3
 * with chain 1 for prices, redis, nats, auth, and every router app under PM2 with ecosystem.config.js: admin,
 * AUCTION_INSTANCES auctions (default 2, as shipped), a submitter per swap chain and one poller for both, and with
 * BENCH_LEDGER=1 the ledger with a PostgreSQL of its own), in a temporary
 * directory of its own (.local/ is never touched). It reads RSS and PSS of each PM2 app's process from
 * /proc/<pid>/smaps_rollup twice:
 *   at rest      once every app is ready and has idled BENCH_REST_MS (default 15 s), before any swap;
 *   after swaps  after BENCH_SWAPS complete swaps (default 100; auction → user prepare → router prepare → user
 *                fulfill → router claim, as the demo swap does, 4 users at once) and a settle of BENCH_REST_MS.
 * PSS charges each shared page to the processes sharing it in equal parts (the node binary's text, mostly), so
 * the PSS total is what the router costs the machine; RSS counts shared pages in every process. The PM2 daemon
 * is listed but not counted: it is the supervisor, not the router. Prints a table, then one JSON line
 * (`{"bench":"memory",...}`), and stops everything it started. A benchmark, not a test: it exits 0 unless the
 * stack could not run.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pm2DaemonPid, pm2List } from "../scripts/local/pm2";
import { sleep } from "../shared/timing";
import { runSwaps } from "./capacity";
import { fundBenchUsers, startStack, stopStack, type Stack } from "./recovery";
import { percentile, runBench } from "./support";

const SWAPS = Math.max(0, Number(process.env.BENCH_SWAPS ?? 100));
const REST_MS = Math.max(1_000, Number(process.env.BENCH_REST_MS ?? 15_000));
const AUCTION_INSTANCES = Math.max(1, Number(process.env.AUCTION_INSTANCES ?? 2));
/** BENCH_LEDGER=1: the ledger too (a PostgreSQL and the config's ledger section), as `npm run local` runs it. */
const LEDGER = process.env.BENCH_LEDGER === "1";
const SWAP_WORKERS = 4;
/** The issue's target for the whole router (3 chains, chain 1 for prices) after 100 swaps. */
const TARGET_PSS_MB = 300;

const log = (line: string): void => void process.stdout.write(`${line}\n`);

interface Usage {
  readonly rssKb: number;
  readonly pssKb: number;
  /** Private pages (USS): what the process alone holds, whoever else runs node on the machine. */
  readonly ussKb: number;
}

interface ProcessUsage extends Usage {
  /** PM2 app name, with `#n` when the app has several instances. */
  readonly name: string;
  readonly pid: number;
  readonly restarts: number;
  /** CPU time (user + system) the process has used since it started, in ms; NaN when it is gone. */
  readonly cpuMs: number;
}

/** Rss, Pss and private (kB) of one process from /proc/<pid>/smaps_rollup; undefined when it is gone. */
export function readUsage(pid: number): Usage | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  } catch {
    return undefined;
  }
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+([0-9]+) kB`, "m").exec(text)?.[1] ?? NaN);
  return { rssKb: field("Rss"), pssKb: field("Pss"), ussKb: field("Private_Clean") + field("Private_Dirty") };
}

/**
 * utime + stime of one process from /proc/<pid>/stat, in ms (the kernel reports them in USER_HZ, 100 per second on
 * Linux whatever the kernel's own tick); NaN when it is gone. The fields after the command name, which may hold spaces.
 */
export function readCpuMs(pid: number): number {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return NaN;
  }
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of stat(5); fields[0] here is field 3 (state).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Every router process of the stack (PM2's apps), named and in PM2's order. */
function measure(s: Stack): ProcessUsage[] {
  const apps = pm2List(s.paths).filter((a) => a.pid > 0);
  const counts = new Map<string, number>();
  for (const a of apps) counts.set(a.name, (counts.get(a.name) ?? 0) + 1);
  const seen = new Map<string, number>();
  return apps.map((a) => {
    const index = seen.get(a.name) ?? 0;
    seen.set(a.name, index + 1);
    const usage = readUsage(a.pid) ?? { rssKb: NaN, pssKb: NaN, ussKb: NaN };
    const name = (counts.get(a.name) ?? 0) > 1 ? `${a.name}#${index}` : a.name;
    return { name, pid: a.pid, restarts: a.restarts, cpuMs: readCpuMs(a.pid), ...usage };
  });
}

const mb = (kb: number): string => (kb / 1024).toFixed(1);
const total = (rows: readonly Usage[], key: keyof Usage): number => rows.reduce((sum, r) => sum + r[key], 0);

/** The pages the processes share (mostly the node binary's), counted once: the largest RSS − USS of them. */
const sharedOnce = (rows: readonly Usage[]): number => Math.max(0, ...rows.map((r) => r.rssKb - r.ussKb));

function report(rest: ProcessUsage[], after: ProcessUsage[], daemonPid: number | undefined): void {
  const cols = (u: Usage | undefined): string =>
    ["rssKb", "pssKb", "ussKb"].map((k) => (u ? mb(u[k as keyof Usage]) : "-").padStart(8)).join("");
  const totals = (rows: readonly Usage[]): Usage => ({
    rssKb: total(rows, "rssKb"),
    pssKb: total(rows, "pssKb"),
    ussKb: total(rows, "ussKb"),
  });
  log("");
  log(`bench:memory — router processes at rest and after ${SWAPS} swaps (MB)`);
  // CPU s: what each process used between the two readings (the swaps and the settle), e.g. to weigh a V8 flag.
  const cpuS = (r: ProcessUsage, a: ProcessUsage | undefined): number =>
    a && a.pid === r.pid ? (a.cpuMs - r.cpuMs) / 1000 : NaN;
  log(`  ${"".padEnd(18)}${"at rest".padStart(24)}${`after ${SWAPS} swaps`.padStart(24)}`);
  log(
    `  ${"process".padEnd(18)}${["RSS", "PSS", "USS"]
      .map((h) => h.padStart(8))
      .join("")
      .repeat(2)}${"CPU s".padStart(8)}`,
  );
  for (const r of rest) {
    const a = after.find((x) => x.name === r.name);
    const restarted = a && (a.pid !== r.pid || a.restarts !== r.restarts) ? "  (restarted)" : "";
    log(`  ${r.name.padEnd(18)}${cols(r)}${cols(a)}${cpuS(r, a).toFixed(1).padStart(8)}${restarted}`);
  }
  log(`  ${"total".padEnd(18)}${cols(totals(rest))}${cols(totals(after))}`);
  const daemon = daemonPid === undefined ? undefined : readUsage(daemonPid);
  if (daemon)
    log(`  (PM2 daemon, not counted: RSS ${mb(daemon.rssKb)}, PSS ${mb(daemon.pssKb)}, USS ${mb(daemon.ussKb)})`);
  // PSS splits a shared page among every process mapping it, the machine's other node processes too: on a
  // host running only the router, the node binary's pages are split among the router's processes alone.
  const aloneKb = total(after, "ussKb") + sharedOnce(after);
  log(
    `  on a host of its own (USS + the shared pages once), after the swaps: ${mb(aloneKb)} MB; ` +
      "RSS counts the shared pages in every process, USS in none",
  );
  const pssAfterMb = total(after, "pssKb") / 1024;
  log(
    `  target: PSS after swaps <= ${TARGET_PSS_MB} MB: ${pssAfterMb.toFixed(1)} MB, ` +
      `${pssAfterMb <= TARGET_PSS_MB ? "met" : `${(pssAfterMb - TARGET_PSS_MB).toFixed(1)} MB over`}`,
  );
  const row = (p: ProcessUsage) => ({
    name: p.name,
    pid: p.pid,
    restarts: p.restarts,
    rssKb: p.rssKb,
    pssKb: p.pssKb,
    ussKb: p.ussKb,
    cpuMs: p.cpuMs,
  });
  log(
    JSON.stringify({
      bench: "memory",
      swaps: SWAPS,
      auctionInstances: AUCTION_INSTANCES,
      ledger: LEDGER,
      rest: rest.map(row),
      after: after.map(row),
      totalKb: { rest: totals(rest), after: totals(after) },
      aloneAfterKb: aloneKb,
      pm2DaemonKb: daemon ?? null,
      targetPssMb: TARGET_PSS_MB,
    }),
  );
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "bench-memory-"));
  log(`bench:memory: starting anvil ×3, redis, nats, auth and the router under PM2 in ${dir}`);
  // startStack stops what it started when it fails; the directory is ours to remove.
  const s = await startStack(dir, { auctionInstances: AUCTION_INSTANCES, ledger: LEDGER }).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  try {
    const users = await fundBenchUsers(s, SWAP_WORKERS);
    log(`stack ready; resting ${REST_MS} ms`);
    await sleep(REST_MS);
    const rest = measure(s);
    log(`running ${SWAPS} swaps…`);
    const startedMs = Date.now();
    const swaps = await runSwaps(s, users, SWAPS);
    if (swaps.failures.length > 0) throw new Error(`${swaps.failures.length} swaps failed: ${swaps.failures[0]}`);
    const durations = swaps.results.map((r) => r.totalMs);
    const sorted = [...durations].sort((a, b) => a - b);
    log(
      `${SWAPS} swaps in ${((Date.now() - startedMs) / 1000).toFixed(1)} s ` +
        `(p50 ${(percentile(sorted, 0.5) / 1000).toFixed(2)} s); settling ${REST_MS} ms`,
    );
    await sleep(REST_MS);
    report(rest, measure(s), pm2DaemonPid(s.paths));
    return 0;
  } finally {
    await stopStack(s, dir, log);
  }
}

if (require.main === module) {
  runBench("bench:memory", main);
}

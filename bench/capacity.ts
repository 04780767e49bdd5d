/**
 * `npm run bench:capacity`: what one complete swap costs the router's Redis. Starts the stack of
 * bench:recovery (anvil ×3, redis, nats, auth, the router under PM2, one auction instance) in a temporary
 * directory, then:
 *   1. an idle window (IDLE_MS): the background traffic of an idle router (pollers, leases, heartbeats, BullMQ
 *      workers' blocking reads), as a rate per second;
 *   2. BENCH_SWAPS complete swaps (default 20: auction → user prepare → router prepare → user fulfill → router
 *      claim, as `npm run local`'s demo does), BENCH_SWAP_WORKERS users at once (default 4).
 * From `INFO commandstats`, `INFO stats`, `INFO cpu` and `INFO memory` before and after each window it prints,
 * per swap net of the idle rate: commands (the top 10 too), redis-server CPU, and used_memory; and, from
 * `MEMORY USAGE` of every key before and after the swaps, the bytes each kind of key grew by per swap, with its
 * TTL (what stays per completed swap, and for how long). A benchmark, not a test: it prints and exits 0 unless
 * the stack could not run. It also prints the router's receiving prepares under load: from each user's prepare mined
 * to the router's prepare seen mined (p50/p99/max), and prepares/s. The figure with 200 swaps in
 * flight: BENCH_SWAPS=200 BENCH_SWAP_WORKERS=200.
 * Env: BENCH_SWAPS (20), BENCH_SWAP_WORKERS (4), BENCH_IDLE_MS (15000).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet, parseEther } from "ethers";
import { Redis } from "ioredis";
import { RECEIVING_CHAIN_ID, SENDING_CHAIN_ID, type LocalChainHandle } from "../scripts/local/chains";
import { sleep } from "../shared/timing";
import type { DemoSwapResult } from "../scripts/local/demo-swap";
import { fundBenchUsers, startStack, stopStack, swapOnStack, type Stack } from "./recovery";
import { percentile, runBench } from "./support";

const SWAPS = Math.max(1, Number(process.env.BENCH_SWAPS ?? 20));
const IDLE_MS = Math.max(1_000, Number(process.env.BENCH_IDLE_MS ?? 15_000));
const SWAP_WORKERS = Math.max(1, Number(process.env.BENCH_SWAP_WORKERS ?? 4));
const SWAP_AMOUNT_WEI = parseEther("10");
const START_SPREAD_MS = 25;
/** After the last claim is mined: its job's completion and the pollers' records of it land within a few ticks. */
const SETTLE_MS = 3_000;

const log = (line: string): void => void process.stdout.write(`${line}\n`);

// ---- Redis snapshots ------------------------------------------------------------------------------------

interface Snapshot {
  readonly atMs: number;
  /** Per command: calls and µs (INFO commandstats; commands run by Lua scripts are counted here too). */
  readonly commands: Map<string, { calls: number; usec: number }>;
  /** INFO stats total_commands_processed: commands as clients sent them. */
  readonly processed: number;
  /** redis-server CPU seconds, user + sys. */
  readonly cpuSec: number;
  readonly usedMemory: number;
}

function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const at = line.indexOf(":");
    if (at > 0 && !line.startsWith("#")) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

async function snapshot(redis: Redis): Promise<Snapshot> {
  const [cmdstats, stats, cpu, memory] = await Promise.all(
    ["commandstats", "stats", "cpu", "memory"].map((section) => redis.info(section)),
  );
  const commands = new Map<string, { calls: number; usec: number }>();
  for (const [name, value] of infoFields(cmdstats)) {
    const calls = /calls=([0-9]+)/.exec(value);
    const usec = /usec=([0-9]+)/.exec(value);
    if (calls && usec) commands.set(name.replace(/^cmdstat_/, ""), { calls: Number(calls[1]), usec: Number(usec[1]) });
  }
  const c = infoFields(cpu);
  return {
    atMs: Date.now(),
    commands,
    processed: Number(infoFields(stats).get("total_commands_processed")),
    cpuSec: Number(c.get("used_cpu_user")) + Number(c.get("used_cpu_sys")),
    usedMemory: Number(infoFields(memory).get("used_memory")),
  };
}

interface Window {
  readonly seconds: number;
  readonly calls: Map<string, number>;
  readonly usec: Map<string, number>;
  readonly processed: number;
  readonly cpuSec: number;
}

function windowOf(a: Snapshot, b: Snapshot): Window {
  const calls = new Map<string, number>();
  const usec = new Map<string, number>();
  for (const [name, after] of b.commands) {
    const before = a.commands.get(name) ?? { calls: 0, usec: 0 };
    calls.set(name, after.calls - before.calls);
    usec.set(name, after.usec - before.usec);
  }
  return {
    seconds: (b.atMs - a.atMs) / 1000,
    calls,
    usec,
    processed: b.processed - a.processed,
    cpuSec: b.cpuSec - a.cpuSec,
  };
}

/** Every key's MEMORY USAGE (exact: SAMPLES 0) and PTTL. */
async function keyUsage(redis: Redis): Promise<Map<string, { bytes: number; pttl: number }>> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "COUNT", 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  const usage = new Map<string, { bytes: number; pttl: number }>();
  for (let i = 0; i < keys.length; i += 500) {
    const slice = keys.slice(i, i + 500);
    const pipeline = redis.pipeline();
    for (const key of slice) pipeline.memory("USAGE", key, "SAMPLES", 0).pttl(key);
    const results = (await pipeline.exec()) ?? [];
    slice.forEach((key, j) => {
      const bytes = Number(results[2 * j]?.[1] ?? 0);
      const pttl = Number(results[2 * j + 1]?.[1] ?? -2);
      if (pttl !== -2) usage.set(key, { bytes, pttl });
    });
  }
  return usage;
}

/** A key's kind: its name with addresses, hashes, transfer keys and long numbers replaced. */
export function keyKind(key: string): string {
  return key
    .replace(/0x[0-9a-fA-F]{64}-0x[0-9a-fA-F]{40}/g, "<transferKey>")
    .replace(/0x[0-9a-fA-F]{40,}/g, "<hex>")
    .replace(/[0-9a-fA-F]{32,}/g, "<hash>")
    .replace(/(auction-claim:).+$/, "$1<requestId>")
    .replace(/(^|[:-])[0-9]{6,}(?=$|[:-])/g, "$1<n>");
}

// ---- swaps ----------------------------------------------------------------------------------------------

/** One swap's receiving prepare: its user's prepare mined, the router's prepare seen mined (if it was). */
interface PrepareTiming {
  user?: number;
  router?: number;
}

/** `count` complete swaps of `amountWei` TEST, the users in parallel (each one swap at a time). */
export async function runSwaps(
  s: Stack,
  users: readonly Wallet[],
  count: number,
  amountWei = SWAP_AMOUNT_WEI,
): Promise<{ results: DemoSwapResult[]; prepares: PrepareTiming[]; failures: string[] }> {
  const results: DemoSwapResult[] = [];
  const prepares: PrepareTiming[] = [];
  const failures: string[] = [];
  let left = count;
  // The local chains automine: with no transaction left to mine, a sending prepare would never reach the
  // confirmations the router waits for. A block a second on both swap chains while the swaps run, as a live chain.
  const chains = [SENDING_CHAIN_ID, RECEIVING_CHAIN_ID].map((id) => s.chains.get(id) as LocalChainHandle);
  const miner = setInterval(() => {
    for (const c of chains) void c.provider.send("evm_mine", []).catch(() => undefined);
  }, 1_000);
  await Promise.all(
    users.map(async (user, i) => {
      // Users arrive over a few seconds (START_SPREAD_MS apart), not in one instant: 200 messaging logins at once
      // time out at the local auth service, which is not the router.
      await sleep(i * START_SPREAD_MS);
      while (left > 0) {
        left -= 1;
        const timing: PrepareTiming = {};
        prepares.push(timing);
        try {
          results.push(
            await swapOnStack(s, user, amountWei, 120_000, (who, atMs) => {
              timing[who] = atMs;
            }),
          );
        } catch (err) {
          // Counted and printed: the prepares' figure still holds for the swaps that got that far.
          failures.push(err instanceof Error ? err.message : String(err));
        }
      }
    }),
  ).finally(() => clearInterval(miner));
  return { results, prepares, failures };
}

/** Mean gasUsed of the transactions mined on `chain` after block `from`, split by sender: the router or users. */
async function gasBySender(chain: LocalChainHandle, router: string, from: number): Promise<string> {
  const head = await chain.provider.getBlockNumber();
  const gas = { router: [] as bigint[], users: [] as bigint[] };
  for (let n = from + 1; n <= head; n += 1) {
    const block = await chain.provider.getBlock(n, true);
    for (const tx of block?.prefetchedTransactions ?? []) {
      const receipt = await chain.provider.getTransactionReceipt(tx.hash);
      if (receipt) (tx.from.toLowerCase() === router.toLowerCase() ? gas.router : gas.users).push(receipt.gasUsed);
    }
  }
  const mean = (xs: bigint[]): string => (xs.length ? String(xs.reduce((a, b) => a + b, 0n) / BigInt(xs.length)) : "-");
  return (
    `chain ${chain.chainId}: router ${gas.router.length} txs, mean gasUsed ${mean(gas.router)}; ` +
    `users ${gas.users.length} txs, mean ${mean(gas.users)}; ${head - from} blocks`
  );
}

// ---- figures ----------------------------------------------------------------------------------------------

const fmt = (n: number, digits = 1): string => n.toFixed(digits);

function fmtTtl(pttl: number): string {
  if (pttl === -1) return "none";
  const days = pttl / 86_400_000;
  return days >= 1 ? `${fmt(days)} d` : `${fmt(pttl / 1000)} s`;
}

function report(idle: Window, swaps: Window, durationsMs: number[], memBefore: number, memAfter: number): void {
  const net = (swapValue: number, idleValue: number): number =>
    (swapValue - (idleValue / idle.seconds) * swaps.seconds) / SWAPS;
  const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
  log("");
  log(`bench:capacity — ${SWAPS} swaps of 10 TEST 1337 → 1338 in ${fmt(swaps.seconds)} s (${SWAP_WORKERS} users)`);
  const sorted = [...durationsMs].sort((a, b) => a - b);
  log(`  swap duration p50 ${fmt(percentile(sorted, 0.5) / 1000, 2)} s, max ${fmt(percentile(sorted, 1) / 1000, 2)} s`);
  log(
    `  idle router (${fmt(idle.seconds)} s): ${fmt(idle.processed / idle.seconds)} commands/s from clients, ` +
      `${fmt(sum(idle.calls) / idle.seconds)} commandstats calls/s, redis CPU ${fmt((idle.cpuSec / idle.seconds) * 1000)} ms/s`,
  );
  log("");
  log("per swap, net of the idle rate:");
  // Both count the commands a Lua script runs (redis.call) as well as the EVAL/EVALSHA itself (Redis 7.0).
  log(
    `  commands: ${fmt(net(swaps.processed, idle.processed))} (total_commands_processed; commandstats sum ` +
      `${fmt(net(sum(swaps.calls), sum(idle.calls)))}; both include the commands run inside Lua scripts)`,
  );
  log(`  redis-server CPU: ${fmt(net(swaps.cpuSec, idle.cpuSec) * 1000, 2)} ms`);
  log(`  used_memory: ${fmt((memAfter - memBefore) / SWAPS / 1024, 2)} KiB (${memBefore} → ${memAfter} bytes)`);
  log("  top 10 commands (calls per swap, net; µs per swap):");
  const rows = [...swaps.calls.keys()]
    .map((name) => ({
      name,
      calls: net(swaps.calls.get(name) ?? 0, idle.calls.get(name) ?? 0),
      usec: net(swaps.usec.get(name) ?? 0, idle.usec.get(name) ?? 0),
    }))
    .sort((a, b) => b.calls - a.calls)
    .slice(0, 10);
  for (const r of rows) log(`    ${r.name.padEnd(22)}${fmt(r.calls).padStart(8)}${fmt(r.usec, 0).padStart(10)} µs`);
}

/**
 * The receiving chain's prepares: each from its user's prepare mined to the router's prepare seen mined (the
 * poller's detection, the submitter's checks, liquidity hold included, the send and the mining), and their rate
 * from the first user prepare to the last router prepare.
 */
function reportPrepares(prepares: readonly PrepareTiming[], failures: readonly string[]): void {
  const done = prepares.filter((p): p is Required<PrepareTiming> => p.user !== undefined && p.router !== undefined);
  if (done.length > 0) {
    const waits = done.map((p) => p.router - p.user).sort((a, b) => a - b);
    const spanSec = (Math.max(...done.map((p) => p.router)) - Math.min(...done.map((p) => p.user))) / 1000;
    log(
      `  router prepares (${SWAP_WORKERS} swaps in flight): ${done.length} of ${prepares.length}; user prepare mined → ` +
        `router prepare seen mined p50 ${fmt(percentile(waits, 0.5) / 1000, 2)} s, p99 ${fmt(percentile(waits, 0.99) / 1000, 2)} s, ` +
        `max ${fmt(percentile(waits, 1) / 1000, 2)} s; ${fmt(done.length / spanSec)} prepares/s over ${fmt(spanSec)} s`,
    );
  }
  const reasons = new Map<string, number>();
  for (const f of failures) reasons.set(f, (reasons.get(f) ?? 0) + 1);
  for (const [reason, n] of reasons) log(`  swaps that did not complete: ${n}: ${reason}`);
}

/** "none" (no TTL), one TTL, or the range the keys' TTLs span. */
function ttlRange(pttls: readonly number[]): string {
  const set = pttls.filter((t) => t >= 0);
  if (set.length === 0) return "none";
  const [lo, hi] = [Math.min(...set), Math.max(...set)];
  const range = lo === hi || fmtTtl(lo) === fmtTtl(hi) ? fmtTtl(hi) : `${fmtTtl(lo)}–${fmtTtl(hi)}`;
  return set.length < pttls.length ? `${range} (some none)` : range;
}

function reportKeys(
  before: Map<string, { bytes: number; pttl: number }>,
  after: Map<string, { bytes: number; pttl: number }>,
): void {
  const kinds = new Map<string, { newKeys: number; bytes: number; ttls: number[] }>();
  for (const [key, a] of after) {
    const b = before.get(key);
    const grown = a.bytes - (b?.bytes ?? 0);
    if (b !== undefined && grown === 0) continue;
    const kind = keyKind(key);
    const entry = kinds.get(kind) ?? { newKeys: 0, bytes: 0, ttls: [] };
    entry.newKeys += b === undefined ? 1 : 0;
    entry.bytes += grown;
    entry.ttls.push(a.pttl);
    kinds.set(kind, entry);
  }
  const rows = [...kinds.entries()].sort((x, y) => y[1].bytes - x[1].bytes);
  const total = rows.reduce((acc, [, e]) => acc + e.bytes, 0);
  log("");
  log(`keys per swap (MEMORY USAGE after − before, ${SWAPS} swaps; TTL as found after the swaps):`);
  log(`  ${"kind".padEnd(78)}${"new/swap".padStart(9)}${"B/swap".padStart(9)}  TTL`);
  for (const [kind, e] of rows) {
    log(
      `  ${kind.slice(0, 78).padEnd(78)}${fmt(e.newKeys / SWAPS, 2).padStart(9)}${fmt(e.bytes / SWAPS, 0).padStart(9)}  ${ttlRange(e.ttls)}`,
    );
  }
  log(`  ${"total".padEnd(78)}${"".padStart(9)}${fmt(total / SWAPS, 0).padStart(9)}`);
}

// ---- main -----------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "bench-capacity-"));
  log(`bench:capacity: starting anvil ×3, redis, nats, auth and the router under PM2 in ${dir}`);
  // startStack stops what it started when it fails; the directory is ours to remove.
  const s = await startStack(dir).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  const redis = new Redis(s.redisUrl, { maxRetriesPerRequest: null });
  try {
    const sending = s.chains.get(SENDING_CHAIN_ID) as LocalChainHandle;
    const receiving = s.chains.get(RECEIVING_CHAIN_ID) as LocalChainHandle;
    const users = await fundBenchUsers(s, SWAP_WORKERS);
    // One warm-up swap: the first bid waits for the pollers' balances; caches and connections fill.
    await runSwaps(s, users.slice(0, 1), 1);
    await sleep(SETTLE_MS);

    const idleStart = await snapshot(redis);
    await sleep(IDLE_MS);
    const idleEnd = await snapshot(redis);
    const keysBefore = await keyUsage(redis);
    const swapStart = await snapshot(redis);
    const fromBlocks = await Promise.all([sending, receiving].map((c) => c.provider.getBlockNumber()));
    log(`running ${SWAPS} swaps…`);
    const swaps = await runSwaps(s, users, SWAPS);
    if (swaps.results.length === 0) throw new Error(`no swap completed: ${swaps.failures[0] ?? ""}`);
    await sleep(SETTLE_MS);
    const swapEnd = await snapshot(redis);
    const keysAfter = await keyUsage(redis);
    const gas = await Promise.all([sending, receiving].map((c, i) => gasBySender(c, s.router, fromBlocks[i])));
    report(
      windowOf(idleStart, idleEnd),
      windowOf(swapStart, swapEnd),
      swaps.results.map((r) => r.totalMs),
      swapStart.usedMemory,
      swapEnd.usedMemory,
    );
    reportPrepares(swaps.prepares, swaps.failures);
    reportKeys(keysBefore, keysAfter);
    log("");
    log(
      "gas of the swaps' transactions (1337: router claims, users approve + prepare; 1338: router prepares, users fulfill):",
    );
    for (const line of gas) log(`  ${line}`);
    return 0;
  } finally {
    redis.disconnect();
    await stopStack(s, dir, log);
  }
}

if (require.main === module) {
  runBench("bench:capacity", main);
}

/**
 * `npm run drain`: before an upgrade or a stop (docs/operating.md#drain-and-upgrade). Switches clean-up mode on in
 * Redis (`cleanUpModeKey`: every auction instance refuses new bids with RouterInCleanUpMode from then on, relays
 * and open transfers still finish), then reads the admin API's GET /status every 2 s, printing what is left per
 * chain whenever it changes, and returns 0 once /status says `drained`.
 *   npm run drain                       switch on and wait until drained
 *   npm run drain -- --timeout 1800     give up (exit 2, the switch stays on) after 1800 s
 *   npm run drain -- --off              switch clean-up mode off again (after the upgrade)
 * The config file: ROUTER_CONFIG_FILE, or config.json, or the running local stack's (scripts/cli-config.ts); the admin API at the
 * config's host and port (ADMIN_URL overrides, e.g. http://10.0.0.5:8080 when it runs on another host).
 */
import { Redis } from "ioredis";
import { errorMessage } from "../shared/errors";
import { redisOptions } from "../shared/queues";
import { cleanUpModeKey } from "../shared/coordination/keys";
import { sleep } from "../shared/timing";
import { adminUrlOf, fetchStatus } from "./admin-client";
import { loadCliConfig } from "./cli-config";

const USAGE = "usage: npm run drain [-- --timeout SECONDS | --off]";
/** How often /status is read while waiting. */
const POLL_MS = 2_000;

/** The parts of GET /status the drain reads (services/admin/status.ts). */
export interface DrainStatusView {
  readonly drained: boolean;
  readonly modes: { readonly cleanUpMode: boolean };
  readonly chains: ReadonlyArray<{
    readonly chainId: number;
    readonly openTransfers: number;
    readonly queue: Readonly<Record<string, number>>;
    readonly pendingTransactions: readonly unknown[];
  }>;
}

const IN_FLIGHT = ["waiting", "active", "delayed", "prioritized", "waiting-children"];

/** One progress line: what each chain still has to finish, e.g. `1337: 1 open transfer, 0 jobs, 0 pending tx`. */
export function drainProgress(status: DrainStatusView): string {
  if (status.drained) {
    return "drained: no open transfer, no job in flight, no pending transaction";
  }
  const chains = status.chains.map((chain) => {
    const jobs = IN_FLIGHT.reduce((sum, state) => sum + (chain.queue[state] ?? 0), 0);
    return `${chain.chainId}: ${chain.openTransfers} open transfer(s), ${jobs} job(s), ${chain.pendingTransactions.length} pending tx`;
  });
  return `waiting: ${chains.join("; ")}`;
}

class DrainCliError extends Error {}

interface DrainArgs {
  readonly off: boolean;
  readonly timeoutSec?: number;
}

function parseArgs(args: readonly string[]): DrainArgs {
  if (args.length === 0) return { off: false };
  if (args.length === 1 && args[0] === "--off") return { off: true };
  if (args.length === 2 && args[0] === "--timeout" && /^[0-9]+$/.test(args[1])) {
    return { off: false, timeoutSec: Number(args[1]) };
  }
  throw new DrainCliError(USAGE);
}

async function readStatus(adminUrl: string, adminToken: string): Promise<DrainStatusView> {
  const status = (await fetchStatus(adminUrl, adminToken)) as DrainStatusView;
  if (typeof status.drained !== "boolean") {
    throw new Error("GET /status has no `drained` field: is the admin API of an older version still running?");
  }
  return status;
}

async function main(): Promise<number> {
  const out = (line: string): void => void process.stdout.write(`${new Date().toISOString()} ${line}\n`);
  let args: DrainArgs;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${errorMessage(err)}\n`);
    return 1;
  }
  const config = loadCliConfig("drain");
  if (config === undefined) return 1;
  const redis = new Redis({ ...redisOptions(config.redis), maxRetriesPerRequest: 1, connectTimeout: 5_000 });
  redis.on("error", () => undefined);
  const key = cleanUpModeKey(config.redisPrefix);
  try {
    if (args.off) {
      const removed = await redis.del(key);
      out(removed === 1 ? "clean-up mode switched off: auctions bid again" : "clean-up mode was not switched on");
      if (config.cleanUpMode)
        out("note: cleanUpMode is true in the config file, which keeps the router in clean-up mode");
      return 0;
    }
    // NX: a second drain keeps the first one's start time.
    await redis.set(key, JSON.stringify({ sinceMs: Date.now() }), "NX");
    out("clean-up mode on: every auction refuses new bids (RouterInCleanUpMode); open transfers and relays finish");
    const adminUrl = adminUrlOf(config, process.env);
    const deadline = args.timeoutSec === undefined ? Infinity : Date.now() + args.timeoutSec * 1000;
    let last = "";
    for (;;) {
      let line: string;
      let drained = false;
      try {
        const status = await readStatus(adminUrl, config.adminToken);
        drained = status.drained;
        line = drainProgress(status);
      } catch (err) {
        line = `admin API at ${adminUrl} not answering: ${errorMessage(err)}`;
      }
      if (line !== last) out(line);
      last = line;
      if (drained) return 0;
      if (Date.now() >= deadline) {
        out(`not drained after ${args.timeoutSec} s; clean-up mode stays on (npm run drain -- --off to undo)`);
        return 2;
      }
      await sleep(POLL_MS);
    }
  } catch (err) {
    process.stderr.write(`drain: ${errorMessage(err)}\n`);
    return 1;
  } finally {
    redis.disconnect();
  }
}

if (require.main === module) {
  void main().then((code) => {
    process.exitCode = code;
  });
}

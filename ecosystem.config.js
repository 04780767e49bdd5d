/**
 * PM2 process file for production: `npm run build && npx pm2 start ecosystem.config.js`.
 * One app per role, read from the config file (config.json in this folder, or ROUTER_CONFIG_FILE):
 *   admin (1)          the admin API
 *   auction (N)        AUCTION_INSTANCES, default 2: bids over NATS; the instances share one NATS queue group per
 *                      router signer and claim each request in Redis, so each is answered once, also when its
 *                      instance dies mid-request (another takes it over): two make a single kill invisible
 *   submitter-<id>     per chain of chainConfig: 1 + SUBMITTER_STANDBYS (default 0); the chain's queue admits
 *                      one active job at a time, so a standby is a hot spare, never a second nonce sequence
 *   ledger (1)         only when the config has a `ledger` section: books every transaction named on the ledger
 *                      queue into PostgreSQL (docs/accounting.md); one instance (an advisory lock guards its
 *                      migrations, and its rows are written once whatever runs them)
 *   poller             one app for every chain this host polls (CHAIN_ID=<id>,<id>,...): 1 + POLLER_STANDBYS
 *                      (default 0) processes, each running one independent poller per chain; one poller lease per
 *                      chain in Redis, so only its holder polls and writes the chain's cursor and records; a standby
 *                      takes over each lease its holder drops (within POLLER_LEASE_TTL_MS, default 3 s)
 *   poller-<id>        instead of `poller`, with POLLER_PROCESS_PER_CHAIN=1: one app per chain, as before.
 *                      One process for all chains saves a process's own memory (30-35 MB) per chain past the
 *                      first (bench:memory: 259 MB PSS for the router after 100 swaps, 294-305 with two pollers);
 *                      the price is that a crash, a restart or a stalled event loop of that process touches every
 *                      chain it polls at once (each chain's lease still fails over on its own, to a standby or the
 *                      restarted process, and a failing tick is retried by its own chain's loop alone). Per chain
 *                      isolates a chain's poller, or places it on a host of its own with ROUTER_ROLES=poller:<id>
 *                      (docs/scaling.md, "One poller process or one per chain")
 * A chain that is in no swap pool (chain 1 when it is only there for gas pricing) gets no submitter and no
 * poller unless ROUTER_ROLES names it (`submitter:1`, `poller:1`); with no swap pool at all, every chain gets both.
 * ROUTER_ROLES picks what this host runs (docs/scaling.md): a comma-separated list of `admin`, `auction`, `ledger`,
 * `submitter`, `poller` (every pool chain) and `submitter:<chainId>`, `poller:<chainId>` (that chain only), e.g.
 * `auction,submitter,poller:1337`. Unset or empty: everything. Pollers and submitters may run on several hosts
 * (one poller lease and one send lease per chain: the others are standbys), auctions anywhere.
 * Every process validates the whole config itself before connecting to anything, sends "ready" once it
 * serves (wait_ready), and drains on SIGINT/SIGTERM within 8 s (shared/process/run-service.ts): a submitter
 * finishes or hands back its job, every process closes its queues and connections.
 *
 * Logs: ROUTER_LOG_DIR (default ./logs) holds <app>.out.log and <app>.error.log per app, each line
 * prefixed with its date; rotate them with pm2-logrotate (`pm2 install pm2-logrotate`).
 * SUBMITTER_INSTANCES (the older name for 1 + standbys) is still read when SUBMITTER_STANDBYS is unset.
 */
const fs = require("node:fs");
const path = require("node:path");

const configFile = path.resolve(__dirname, process.env.ROUTER_CONFIG_FILE || "config.json");
const logDir = path.resolve(__dirname, process.env.ROUTER_LOG_DIR || "logs");

function readConfigFile() {
  let raw;
  try {
    raw = JSON.parse(fs.readFileSync(configFile, "utf8"));
  } catch (err) {
    throw new Error(
      `ecosystem.config.js: cannot read ${configFile} (${err.code || err.message}); create it from config.example.json`,
    );
  }
  const ids = Object.keys((raw && raw.chainConfig) || {}).filter((id) => /^[0-9]+$/.test(id));
  if (ids.length === 0) {
    throw new Error(`ecosystem.config.js: ${configFile} has no chainConfig entries`);
  }
  const pools = Array.isArray(raw.swapPools) ? raw.swapPools : [];
  const poolChains = new Set();
  for (const pool of pools) {
    for (const asset of (pool && Array.isArray(pool.assets) && pool.assets) || []) {
      poolChains.add(String(asset && asset.chainId));
    }
  }
  // No pool at all (a router winding down, or not set up yet): nothing tells the chains apart, run them all.
  const withPools = poolChains.size === 0 ? ids : ids.filter((id) => poolChains.has(id));
  const ledger = raw.ledger !== undefined && raw.ledger !== null;
  return { ids, withPools, ledger };
}

const ROLES = ["admin", "auction", "submitter", "poller", "ledger"];

/** ROUTER_ROLES → { admin, auction, submitter: [chainIds], poller: [chainIds] }; a bad value throws, naming it. */
function selectRoles(chains) {
  const raw = process.env.ROUTER_ROLES;
  const tokens = (raw || "")
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
  const selected = { admin: false, auction: false, ledger: false, submitter: new Set(), poller: new Set() };
  for (const token of tokens.length > 0 ? tokens : ROLES) {
    const match = /^(admin|auction|ledger|submitter|poller)(?::([0-9]+))?$/.exec(token);
    if (!match) {
      throw new Error(
        `ecosystem.config.js: ROUTER_ROLES: ${JSON.stringify(token)} is not a role; use a comma-separated list of ` +
          "admin, auction, ledger, submitter, poller, submitter:<chainId>, poller:<chainId>",
      );
    }
    const [, role, chainId] = match;
    if (chainId === undefined) {
      if (role === "admin" || role === "auction" || role === "ledger") selected[role] = true;
      else chains.withPools.forEach((id) => selected[role].add(id));
    } else if (role === "admin" || role === "auction" || role === "ledger") {
      throw new Error(`ecosystem.config.js: ROUTER_ROLES: ${JSON.stringify(token)}: ${role} takes no chain id`);
    } else if (!chains.ids.includes(chainId)) {
      throw new Error(
        `ecosystem.config.js: ROUTER_ROLES: ${JSON.stringify(token)}: chain ${chainId} is not in chainConfig ` +
          `(configured: ${chains.ids.join(", ")})`,
      );
    } else {
      selected[role].add(chainId);
    }
  }
  // chainConfig order, whatever order ROUTER_ROLES named them in.
  const ordered = (set) => chains.ids.filter((id) => set.has(id));
  // The ledger runs only where the config turns the books on.
  return {
    ...selected,
    ledger: selected.ledger && chains.ledger,
    submitter: ordered(selected.submitter),
    poller: ordered(selected.poller),
  };
}

function count(name, { min, max, fallback }) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") {
    return fallback;
  }
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(
      `ecosystem.config.js: ${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

const auctionInstances = count("AUCTION_INSTANCES", { min: 1, max: 32, fallback: 2 });
const submitterInstances =
  process.env.SUBMITTER_STANDBYS !== undefined && process.env.SUBMITTER_STANDBYS !== ""
    ? 1 + count("SUBMITTER_STANDBYS", { min: 0, max: 8, fallback: 0 })
    : count("SUBMITTER_INSTANCES", { min: 1, max: 9, fallback: 1 });
const pollerInstances = 1 + count("POLLER_STANDBYS", { min: 0, max: 8, fallback: 0 });
const pollerProcessPerChain = flag("POLLER_PROCESS_PER_CHAIN");

/** An on/off variable: unset, empty or 0 is off, 1 is on; anything else throws, naming it. */
function flag(name) {
  const raw = process.env[name];
  if (raw === undefined || raw === "" || raw === "0") {
    return false;
  }
  if (raw === "1") {
    return true;
  }
  throw new Error(`ecosystem.config.js: ${name} must be 0 or 1, got ${JSON.stringify(raw)}`);
}

/** The poller apps: one for every polled chain (CHAIN_ID lists them), or one per chain (POLLER_PROCESS_PER_CHAIN=1). */
function pollerApps(chainIds) {
  const groups = pollerProcessPerChain ? chainIds.map((id) => [id]) : chainIds.length > 0 ? [chainIds] : [];
  return groups.map((ids) =>
    app(
      pollerProcessPerChain ? `poller-${ids[0]}` : "poller",
      "dist/services/poller/main.js",
      withMemory("poller", { instances: pollerInstances, env: { CHAIN_ID: ids.join(",") } }),
    ),
  );
}

/** Shared by every app: graceful stop within kill_timeout, readiness signal, bounded restart delay, dated logs. */
const common = {
  cwd: __dirname,
  exec_mode: "fork",
  autorestart: true,
  // Processes drain within 8 s (shared/process/run-service.ts); PM2's default 1.6 s would SIGKILL mid-drain.
  kill_timeout: 12000,
  wait_ready: true,
  listen_timeout: 20000,
  // Restarts: a fixed short delay, never PM2's exponential backoff, which under repeated crashes grew
  // to 11.5 s with a submitter's chain stalled meanwhile. A SIGKILLed process is respawned after 250 ms and is
  // ready again ~1-2 s later. Crash loops: PM2 counts a restart as unstable when the process lived under
  // min_uptime (5 s: a bad config or an unreachable Redis kills a process within about a second on a quiet
  // machine, but node's start alone took ~2 s on a loaded 2-core one, where the former 2 s let a crash loop reset
  // PM2's count and run for ever; a healthy process lives far longer), and after max_restarts (10) unstable
  // restarts within min_uptime x max_restarts (50 s) of
  // `pm2 start` it stops restarting the app and logs "too many unstable restarts (10). Stopped." (with a
  // restart_delay, PM2 7 then shows it as "waiting restart" with pid 0 and a frozen ↺ count instead of
  // "errored"; its heartbeat goes missing and RouterProcessHeartbeatMissing fires). A process that starts
  // crashing later restarts every 250 ms; its climbing ↺ count and the RouterRestarting alert are the signal,
  // never a silently growing delay.
  restart_delay: 250,
  min_uptime: 5000,
  max_restarts: 10,
  merge_logs: true,
  // PM2 turns node's source maps on in every process it forks (process.setSourceMapsEnabled) unless told not to;
  // node then parses and keeps the map of every module it loads that names one (dist/'s own from tsc, ethers',
  // nats'): 2-4 MB of each process's own memory (docs/operating.md, "Memory per role"). Stack traces then name
  // dist/'s .js files; ROUTER_SOURCE_MAPS=1 turns the maps back on, for traces in the .ts sources while debugging.
  disable_source_map_support: process.env.ROUTER_SOURCE_MAPS !== "1",
  log_date_format: "YYYY-MM-DD HH:mm:ss.SSS Z",
  env: { ROUTER_CONFIG_FILE: configFile, NODE_ENV: "production" },
};

/**
 * Memory limits per role (figures in docs/operating.md, measured with `npm run bench:memory`).
 * - `--max-semi-space-size` (MB): node's default lets each of the young generation's two semi-spaces grow to
 *   16 MB under load and keeps them; an auction's, poller's or admin's requests allocate little that lives, so
 *   a few MB scavenge as fast (bench:auction) at a fraction of the resident memory.
 * - `--max-old-space-size` (MB): node's default (about half the machine's memory, up to 4 GB) lets the heap
 *   grow far before V8 collects; the role's limit makes it collect sooner. A heap that still reaches it means a
 *   leak: the process dies with "heap out of memory" and PM2 restarts it (restart_delay), as it would at
 *   max_memory_restart, which stays above the limit as the guard for memory outside the heap.
 * - MALLOC_ARENA_MAX=2: glibc gives each thread (V8's GC helpers, libuv's pool) an arena of its own; the
 *   processes allocate little outside the V8 heap, so two arenas serve them. MALLOC_MMAP_THRESHOLD_=131072
 *   keeps glibc from raising its mmap threshold after a large buffer is freed (up to 32 MB by default): a large
 *   buffer (an RPC answer, a compile) is then always mapped and given back on free, never left in the heap.
 * The submitter limits only its young generation, to 4 MB semi-spaces: bench:submitter (500 jobs per chain in
 * flight, confirmations 1, alternated with node's default) carried 69-119 tx/s per chain with them, always near
 * the default's own spread, where 2 MB carried 48 and once never finished (the loop's stalls outlasted the 1 s
 * sender lease again and again); before the holds stopped reading the whole hash, an old-space limit and the
 * allocator settings lost rate too, so it keeps node's old space and glibc's defaults.
 * Measured and not set: --optimize-for-size (no gain but in the submitter, whose bench then twice never
 * finished), --lite-mode (it turns WebAssembly off, and node's fetch needs it: the admin crash-looped).
 * ROUTER_NODE_ARGS replaces the flags of every app (empty: node's defaults), e.g. to measure without them.
 */
const V8_LIMITS = {
  admin: { semiSpaceMb: 1, oldSpaceMb: 128, restartAt: "256M" },
  auction: { semiSpaceMb: 2, oldSpaceMb: 192, jemalloc: true, restartAt: "320M" },
  submitter: { semiSpaceMb: 4, restartAt: "384M" },
  poller: { semiSpaceMb: 1, oldSpaceMb: 192, restartAt: "320M" },
  // Like the admin: one job at a time per slot of `ledger.concurrency`, little that lives past a job.
  ledger: { semiSpaceMb: 1, oldSpaceMb: 128, restartAt: "256M" },
};

/**
 * jemalloc for the auction instances, where the host has it (Debian's libjemalloc2; the Docker image installs it;
 * ROUTER_JEMALLOC names another library, empty turns it off). Under glibc the two instances differed by up to
 * 30 MB after the same work, native memory kept after a peak in glibc's heap (16-24 MB of it); jemalloc gives freed
 * pages back after a second (dirty_decay_ms) and held both near 45 MB in bench:memory. Not for the other roles:
 * its own overhead made the admin and pollers 3-5 MB larger, with nothing to give back.
 */
const JEMALLOC_CANDIDATES =
  process.env.ROUTER_JEMALLOC !== undefined
    ? [process.env.ROUTER_JEMALLOC].filter((p) => p !== "")
    : ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"];
const jemalloc = JEMALLOC_CANDIDATES.find((p) => fs.existsSync(p));

/** The role's node_args and max_memory_restart, and its allocator env (to merge into the app's env). */
function memoryOptions(role) {
  const limits = V8_LIMITS[role];
  const override = process.env.ROUTER_NODE_ARGS;
  const flags = [
    limits.semiSpaceMb ? `--max-semi-space-size=${limits.semiSpaceMb}` : "",
    limits.oldSpaceMb ? `--max-old-space-size=${limits.oldSpaceMb}` : "",
  ]
    .filter((f) => f !== "")
    .join(" ");
  const allocator = limits.oldSpaceMb ? { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072" } : {};
  if (limits.jemalloc && jemalloc !== undefined) {
    Object.assign(allocator, { LD_PRELOAD: jemalloc, MALLOC_CONF: "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0" });
  }
  return { node_args: override !== undefined ? override : flags, max_memory_restart: limits.restartAt, allocator };
}

/** app() options for a role: its memory limits, and its env (e.g. CHAIN_ID) with the allocator settings. */
function withMemory(role, options) {
  const { allocator, ...limits } = memoryOptions(role);
  return { ...options, ...limits, env: { ...allocator, ...(options.env || {}) } };
}

function app(name, script, extra) {
  return {
    ...common,
    name,
    script,
    out_file: path.join(logDir, `${name}.out.log`),
    error_file: path.join(logDir, `${name}.error.log`),
    ...extra,
    env: { ...common.env, ...(extra.env || {}) },
  };
}

const roles = selectRoles(readConfigFile());
fs.mkdirSync(logDir, { recursive: true });

module.exports = {
  apps: [
    ...(roles.admin ? [app("admin", "dist/services/admin/main.js", withMemory("admin", { instances: 1 }))] : []),
    ...(roles.ledger ? [app("ledger", "dist/services/ledger/main.js", withMemory("ledger", { instances: 1 }))] : []),
    ...roles.submitter.map((chainId) =>
      app(
        `submitter-${chainId}`,
        "dist/services/submitter/main.js",
        withMemory("submitter", { instances: submitterInstances, env: { CHAIN_ID: chainId } }),
      ),
    ),
    ...pollerApps(roles.poller),
    // Last: the auction reports ready only once the pollers' balances are fresh and its price and gas caches warm
    // (up to 15 s). Listed before the pollers, it held one of PM2's two start slots (wait_ready) until a poller
    // started behind it, and every app between them started one at a time.
    ...(roles.auction
      ? [
          app(
            "auction",
            "dist/services/auction/main.js",
            withMemory("auction", { instances: auctionInstances, listen_timeout: 40000 }),
          ),
        ]
      : []),
  ],
};

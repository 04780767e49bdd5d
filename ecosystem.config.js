/**
 * PM2 process file: `npm run build && npx pm2 start ecosystem.config.js`.
 * One admin API, and per chain of the config file (config.json in this folder, or ROUTER_CONFIG_FILE) one
 * transaction submitter and one poller. Every process validates the whole config itself before connecting to anything.
 *
 * Scaling: SUBMITTER_INSTANCES=2 runs two submitters per chain; the chain's queue admits one active job at a
 * time, so the second is a hot standby, never a second nonce sequence. AUCTION_INSTANCES=N (default 1) runs N
 * auction processes; they share one NATS queue group per router signer, so each request is answered once.
 */
const fs = require("node:fs");
const path = require("node:path");

const configFile = path.resolve(__dirname, process.env.ROUTER_CONFIG_FILE || "config.json");

function chainIds() {
  let raw;
  try {
    raw = JSON.parse(fs.readFileSync(configFile, "utf8"));
  } catch (err) {
    throw new Error(`ecosystem.config.js: cannot read ${configFile} (${err.code || err.message}); create it from config.example.json`);
  }
  const ids = Object.keys((raw && raw.chainConfig) || {}).filter((id) => /^[0-9]+$/.test(id));
  if (ids.length === 0) {
    throw new Error(`ecosystem.config.js: ${configFile} has no chainConfig entries`);
  }
  return ids;
}

/** Shared by every app: graceful stop within kill_timeout, readiness signal, crash-loop backoff. */
const common = {
  cwd: __dirname,
  exec_mode: "fork",
  autorestart: true,
  // Processes drain within 8 s (shared/process/run-service.ts); PM2's default 1.6 s would SIGKILL mid-drain.
  kill_timeout: 10000,
  wait_ready: true,
  listen_timeout: 20000,
  exp_backoff_restart_delay: 200,
  max_memory_restart: "512M",
  merge_logs: true,
  env: { ROUTER_CONFIG_FILE: configFile, NODE_ENV: "production" },
};

function instances(name) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") {
    return 1;
  }
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 32) {
    throw new Error(`ecosystem.config.js: ${name} must be an integer from 1 to 32, got ${JSON.stringify(raw)}`);
  }
  return n;
}

const submitterInstances = instances("SUBMITTER_INSTANCES");
const auctionInstances = instances("AUCTION_INSTANCES");

module.exports = {
  apps: [
    { ...common, name: "admin", script: "dist/services/admin/main.js", instances: 1 },
    // Fork mode with N instances: each is its own process with its own NATS connection in the shared queue group.
    { ...common, name: "auction", script: "dist/services/auction/main.js", instances: auctionInstances },
    ...chainIds().map((chainId) => ({
      ...common,
      name: `submitter-${chainId}`,
      script: "dist/services/submitter/main.js",
      instances: submitterInstances,
      env: { ...common.env, CHAIN_ID: chainId },
    })),
    // One poller per chain: it owns the chain's block cursor; a second instance would only duplicate reads.
    ...chainIds().map((chainId) => ({
      ...common,
      name: `poller-${chainId}`,
      script: "dist/services/poller/main.js",
      instances: 1,
      env: { ...common.env, CHAIN_ID: chainId },
    })),
  ],
};

import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/**
 * Every metric the router exports, defined in this one file (docs/operating.md lists them, ops/ alerts on them),
 * one function per area. Prometheus conventions: `router_` prefix (not on prom-client's default process_* and
 * nodejs_* metrics), `_total` counters, base units (`_seconds`, `_wei`; token amounts are in the asset's base
 * units, as floats: exact amounts belong in logs). Labels stay low-cardinality:
 * `chain` is a configured chain id, `asset` a pool asset address, `provider` the provider's redacted label,
 * `reason`/`operation`/`state` come from closed sets. Never a transaction id, user or URL.
 *
 * One registry per process (router-metrics.ts): PM2 runs each process on its own port
 * (shared/metrics/metrics-port.ts) because prom-client's cluster aggregation cannot work under PM2.
 */
export function defineRouterMetrics(registry: Registry) {
  const registers = [registry];
  return {
    ...auctionMetrics(registers),
    ...balanceMetrics(registers),
    ...transactionMetrics(registers),
    ...jobMetrics(registers),
    ...chainMetrics(registers),
    ...swapMetrics(registers),
    ...ledgerNamingMetrics(registers),
    ...heartbeatMetrics(registers),
    ...adminMetrics(registers),
    ...ledgerMetrics(registers),
  };
}

/** The auction (services/auction). */
function auctionMetrics(registers: Registry[]) {
  return {
    auctionRequests: new Counter({
      name: "router_auction_requests_total",
      help: "Auction requests received",
      registers,
    }),
    bidsSent: new Counter({
      name: "router_bids_sent_total",
      help: "Signed bids sent, by receiving chain",
      labelNames: ["chain"] as const,
      registers,
    }),
    auctionRefusals: new Counter({
      name: "router_auction_refusals_total",
      help: "Auction requests refused, by refusal code",
      labelNames: ["reason"] as const,
      registers,
    }),
    bidDuration: new Histogram({
      name: "router_bid_duration_seconds",
      help: "Time from an auction request to its answer or refusal",
      labelNames: ["result"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    }),
    lastBidTime: new Gauge({
      name: "router_last_bid_timestamp_seconds",
      help: "Unix time of the last signed bid sent",
      registers,
    }),
    metatxRequests: new Counter({
      name: "router_metatx_requests_total",
      help: "Relay (metatx) requests, by outcome (relayed, refused, failed, dropped, busy) and code",
      labelNames: ["outcome", "reason"] as const,
      registers,
    }),
    refusedVolumeUsd: new Counter({
      name: "router_refused_volume_usd_total",
      help: "Sending amount of auction requests refused for liquidity (NotEnoughLiquidity, LiquidityUnavailable, InventoryBelowMinimum), in USD at chain 1's oracle prices, by route (sending-receiving chain)",
      labelNames: ["route"] as const,
      registers,
    }),
    refusedUnpriced: new Counter({
      name: "router_refused_unpriced_total",
      help: "Auction requests refused for liquidity whose amount had no fresh oracle price (not in router_refused_volume_usd_total), by route",
      labelNames: ["route"] as const,
      registers,
    }),
    requestsShed: new Counter({
      name: "router_requests_shed_total",
      help: "metatx and status requests not handled because the topic's in-flight bound was reached",
      labelNames: ["topic"] as const,
      registers,
    }),
  };
}

/** Liquidity and gas, from the pollers' Redis cache, read at scrape time. */
function balanceMetrics(registers: Registry[]) {
  return {
    liquidity: new Gauge({
      name: "router_liquidity",
      help: "Router's unlocked TransactionManager balance, in asset base units",
      labelNames: ["chain", "asset"] as const,
      registers,
    }),
    liquidityReserved: new Gauge({
      name: "router_liquidity_reserved",
      help: "Liquidity promised by open bids, in asset base units",
      labelNames: ["chain", "asset"] as const,
      registers,
    }),
    inventorySharePercent: new Gauge({
      name: "router_inventory_share_percent",
      help: "Chain's share of its pool's liquidity (unlocked + owed - promised, 1:1 after decimals), percent; admin process",
      labelNames: ["pool", "chain"] as const,
      registers,
    }),
    inventoryMinimumPercent: new Gauge({
      name: "router_inventory_minimum_percent",
      help: "Configured minimumPercent of the chain in the pool (swapPools[i].inventory)",
      labelNames: ["pool", "chain"] as const,
      registers,
    }),
    inventoryTargetPercent: new Gauge({
      name: "router_inventory_target_percent",
      help: "Configured targetPercent of the chain in the pool (swapPools[i].inventory)",
      labelNames: ["pool", "chain"] as const,
      registers,
    }),
    inventoryState: new Gauge({
      name: "router_inventory_state",
      help: "Inventory state of the chain in the pool: 0 ok, 1 low (share below minimum), 2 critical (below floor or nothing unlocked)",
      labelNames: ["pool", "chain"] as const,
      registers,
    }),
    gasBalance: new Gauge({
      name: "router_gas_balance_wei",
      help: "Signer's native balance",
      labelNames: ["chain"] as const,
      registers,
    }),
    minGas: new Gauge({
      name: "router_min_gas_wei",
      help: "Configured minGas of the chain (alert threshold)",
      labelNames: ["chain"] as const,
      registers,
    }),
  };
}

/** Transactions (services/submitter). */
function transactionMetrics(registers: Registry[]) {
  return {
    txSent: new Counter({
      name: "router_tx_sent_total",
      help: "Transactions broadcast (first send of a job attempt)",
      labelNames: ["chain", "operation"] as const,
      registers,
    }),
    txConfirmed: new Counter({
      name: "router_tx_confirmed_total",
      help: "Transactions mined and confirmed",
      labelNames: ["chain", "operation"] as const,
      registers,
    }),
    txFailed: new Counter({
      name: "router_tx_failed_total",
      help: "Transaction jobs that ended in failure (reverted or out of attempts)",
      labelNames: ["chain", "operation"] as const,
      registers,
    }),
    txReplaced: new Counter({
      name: "router_tx_replaced_total",
      help: "Gas bumps: a pending transaction replaced by a higher fee",
      labelNames: ["chain", "operation"] as const,
      registers,
    }),
    txPending: new Gauge({
      name: "router_tx_pending",
      help: "Transactions broadcast and not yet confirmed",
      labelNames: ["chain"] as const,
      registers,
    }),
    txOldestPendingAge: new Gauge({
      name: "router_tx_oldest_pending_age_seconds",
      help: "Age of the oldest unconfirmed transaction",
      labelNames: ["chain"] as const,
      registers,
    }),
    txOldestPendingBlocks: new Gauge({
      name: "router_tx_oldest_pending_blocks",
      help: "Blocks since the oldest unconfirmed transaction was broadcast",
      labelNames: ["chain"] as const,
      registers,
    }),
  };
}

/** Jobs and queues. */
function jobMetrics(registers: Registry[]) {
  return {
    jobDuration: new Histogram({
      name: "router_job_duration_seconds",
      help: "Time from a job's creation to its end",
      labelNames: ["queue", "result"] as const,
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    }),
    jobAttempts: new Histogram({
      name: "router_job_attempts",
      help: "Attempts a job took until it ended",
      labelNames: ["queue", "result"] as const,
      buckets: [1, 2, 3, 5, 8, 13],
      registers,
    }),
    queueJobs: new Gauge({
      name: "router_queue_jobs",
      help: "Jobs per queue and state",
      labelNames: ["queue", "state"] as const,
      registers,
    }),
  };
}

/** Providers, subgraphs, heads. */
function chainMetrics(registers: Registry[]) {
  return {
    providerErrors: new Counter({
      name: "router_provider_errors_total",
      help: "RPC requests a provider failed",
      labelNames: ["chain", "provider"] as const,
      registers,
    }),
    providerFailovers: new Counter({
      name: "router_provider_failovers_total",
      help: "Reads moved on to the next provider",
      labelNames: ["chain"] as const,
      registers,
    }),
    providerHeadLag: new Gauge({
      name: "router_provider_head_lag_blocks",
      help: "Blocks a provider is behind the best head seen",
      labelNames: ["chain", "provider"] as const,
      registers,
    }),
    chainHead: new Gauge({
      name: "router_chain_head_block",
      help: "Chain head as last seen by the chain's poller",
      labelNames: ["chain"] as const,
      registers,
    }),
    chainHeadAge: new Gauge({
      name: "router_chain_head_age_seconds",
      help: "Seconds since the poller last stored the chain's head",
      labelNames: ["chain"] as const,
      registers,
    }),
    subgraphLag: new Gauge({
      name: "router_subgraph_lag_blocks",
      help: "Blocks the subgraph is behind the chain head",
      labelNames: ["chain"] as const,
      registers,
    }),
  };
}

/** Swaps. */
function swapMetrics(registers: Registry[]) {
  return {
    swapsCompleted: new Counter({
      name: "router_swaps_completed_total",
      help: "Swaps whose sending side the router fulfilled",
      labelNames: ["chain", "asset"] as const,
      registers,
    }),
  };
}

/** Naming transactions to the ledger queue (shared/process/ledger-producer.ts). */
function ledgerNamingMetrics(registers: Registry[]) {
  return {
    ledgerNamed: new Counter({
      name: "router_ledger_named_total",
      help: "Transactions named to the ledger queue (book-transaction jobs added or joined), by producer",
      labelNames: ["chain", "source"] as const,
      registers,
    }),
    ledgerNamingFailures: new Counter({
      name: "router_ledger_naming_failures_total",
      help: "Namings Redis refused (retried: the caller holds its job or cursor) or invalid ones (dropped, a bug)",
      labelNames: ["chain", "source", "reason"] as const,
      registers,
    }),
  };
}

/** Processes (admin, from the heartbeat keys). */
function heartbeatMetrics(registers: Registry[]) {
  return {
    processUp: new Gauge({
      name: "router_process_up",
      help: "1 while a router process's heartbeat key is live, 0 once it expired",
      labelNames: ["process"] as const,
      registers,
    }),
    heartbeatAge: new Gauge({
      name: "router_process_heartbeat_age_seconds",
      help: "Seconds since a router process last wrote its heartbeat",
      labelNames: ["process"] as const,
      registers,
    }),
  };
}

/** The admin API (services/admin). */
function adminMetrics(registers: Registry[]) {
  return {
    adminAuthFailures: new Counter({
      name: "router_admin_auth_failures_total",
      help: "Admin requests refused at authentication, by surface (api, page) and reason (no_token, wrong_token, throttled)",
      labelNames: ["surface", "reason"] as const,
      registers,
    }),
  };
}

/**
 * The ledger process (services/ledger, docs/accounting.md). Incremented only when a row was inserted, so each
 * equals the sum of the booked rows; floats (exact to the wei only below 2^53), for rates and alerts: the exact
 * figures are in PostgreSQL (npm run status, GET /pnl; docs/accounting.md "Which figure to act on").
 */
function ledgerMetrics(registers: Registry[]) {
  return {
    gasSpentWei: new Counter({
      name: "router_gas_spent_wei_total",
      help: "Gas the router's signer paid (gasUsed × effectiveGasPrice + L1 data fee, reverted included), as booked",
      labelNames: ["chain", "kind"] as const,
      registers,
    }),
    gasSpentUsd: new Counter({
      name: "router_gas_spent_usd_total",
      help: "The booked gas in USD, counted when priced (at booking or by the repricing pass)",
      labelNames: ["chain", "kind"] as const,
      registers,
    }),
    feesEarnedUsd: new Counter({
      name: "router_fees_earned_usd_total",
      help: "Router fees earned in USD by claimed swaps (sending amount claimed minus receiving amount), when priced",
      registers,
    }),
    swapNetUsd: new Histogram({
      name: "router_swap_net_usd",
      help: "Net USD of a swap when it completes (fee earned + relayer fees earned - gas), priced swaps only",
      buckets: [-10, -1, -0.1, 0, 0.1, 1, 10, 100, 1000],
      registers,
    }),
    ledgerBooked: new Counter({
      name: "router_ledger_booked_total",
      help: "book-transaction jobs done, by result (booked: rows inserted; known: nothing new; not_ours: no gas nor event of this router)",
      labelNames: ["result"] as const,
      registers,
    }),
    ledgerUnpriced: new Gauge({
      name: "router_ledger_unpriced_rows",
      help: "Booked rows whose USD price is still unknown (NULL), as of the last repricing pass",
      registers,
    }),
    ledgerDrift: new Gauge({
      name: "router_ledger_drift",
      help: "The chain's change minus the books' over the last reconciled range, base units (0 when the books agree); subject router-balance or signer-native",
      labelNames: ["chain", "asset", "subject"] as const,
      registers,
    }),
  };
}

export type RouterMetrics = ReturnType<typeof defineRouterMetrics>;

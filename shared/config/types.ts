import type { LogLevel } from "../logging/create-logger";

export type Network = "mainnet" | "testnet" | "local";

/** One chain of `chainConfig` after defaults (docs/config.md, chain object, with the keys we add). */
export interface ChainConfig {
  readonly chainId: number;
  readonly providers: readonly string[];
  /** Empty means "no subgraph": the poller reads TransactionManager logs (docs/decisions.md). */
  readonly subgraph: readonly string[];
  readonly analyticsSubgraph: readonly string[];
  readonly transactionManagerAddress: string;
  readonly priceOracleAddress?: string;
  readonly multicallAddress?: string;
  readonly confirmations: number;
  /** Wei, decimal integer string. */
  readonly minGas: string;
  readonly gasStations: readonly string[];
  readonly allowRelay: boolean;
  /** Relay even when the relayer fee cannot be priced (no oracle): the router then pays a plain fulfill's gas unpaid. */
  readonly allowUnpricedRelay: boolean;
  /** Percent. */
  readonly relayerFeeThreshold: number;
  /** Blocks. */
  readonly subgraphSyncBuffer: number;
  /** Wei, decimal integer string: the gas price used when gas stations and the provider give none. */
  readonly defaultInitialGasPrice?: string;
  /** Asset the Router contract pays relayer fees in; the zero address is the native asset. */
  readonly routerContractRelayerAsset: string;
  /** Wei, decimal integer string: no transaction is priced above this, bumps included. */
  readonly gasPriceMaximum: string;
  /** Percent a stuck transaction's fee is raised by per bump (nodes need at least 10 to replace). */
  readonly gasBumpPercent: number;
  /** Bumps per transaction before the submitter only waits. */
  readonly maxGasBumps: number;
  /** How long a broadcast transaction may stay unmined before it is bumped. */
  readonly confirmationTimeoutMs: number;
  /**
   * Address on chain 1 whose oracle price stands for this chain's native token in the auction's gas fee
   * (the zero address = chain 1's native token via the oracle's wrapped native). Unset: the chain's own
   * oracle at address(0), or a zero gas fee when the chain has no oracle.
   */
  readonly nativeMainnetEquivalent?: string;
  /**
   * Pinned metrics slot of this chain's submitter and poller (shared/metrics/metrics-port.ts); unset: the lowest
   * slot no chain pins, in chainConfig order.
   */
  readonly metricsSlot?: number;
}

/** TLS options for Redis or Sentinel connections (node's tls.connect subset); `true` = system CAs. */
export interface RedisTlsOptions {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly servername?: string;
  readonly rejectUnauthorized?: boolean;
}

export interface RedisSentinelAddress {
  readonly host: string;
  readonly port: number;
}

/** A Redis primary found through Sentinel; ioredis asks the sentinels again on every reconnect. */
export interface RedisSentinelConfig {
  readonly sentinels: readonly RedisSentinelAddress[];
  /** The monitored primary's name (`sentinel monitor <name> ...`). */
  readonly name: string;
  readonly username?: string;
  readonly password?: string;
  readonly sentinelUsername?: string;
  readonly sentinelPassword?: string;
  readonly db?: number;
  /** TLS to the Redis nodes. */
  readonly tls?: boolean | RedisTlsOptions;
  /** TLS to the sentinels themselves. */
  readonly sentinelTls?: boolean | RedisTlsOptions;
}

export type RedisConnectionConfig = { readonly url: string } | RedisSentinelConfig;

/**
 * `redis.minReplicas` and `redis.replicaAckTimeoutMs` (docs/config.md, docs/scaling.md): how many replicas must
 * acknowledge the writes a broadcast or a bid relies on before the router acts on them (shared/coordination/replication.ts).
 */
export interface RedisReplication {
  /** 0 = do not wait (Redis's own asynchronous replication only). */
  readonly minReplicas: number;
  /** Bound on one wait; past it the writes count as not made. */
  readonly ackTimeoutMs: number;
}

export interface SwapPoolAsset {
  readonly assetId: string;
  readonly chainId: number;
  /**
   * The same asset's address on chain 1: the auction prices it with chain 1's oracle (docs/protocol.md#price-sources).
   */
  readonly mainnetEquivalent?: string;
}

/**
 * The share of a pool's liquidity the operator wants on one chain (docs/config.md, "Inventory targets"). Percents
 * of the pool's total, valued at the constant 1:1 swap rate after decimals.
 */
export interface InventoryTarget {
  /** 0..100; the targets of a pool's chains add up to 100. */
  readonly targetPercent: number;
  /** 0..targetPercent: below it the chain is `low`, and the auction declines swaps that would take it there. */
  readonly minimumPercent: number;
  /** Base units of the chain's pool asset, decimal string: below it the chain is `critical`. */
  readonly floor: string;
}

export interface SwapPool {
  readonly name?: string;
  readonly assets: readonly SwapPoolAsset[];
  /** Per chain id (decimal string) of the pool: its target; every chain of the pool has one when set. */
  readonly inventory?: Readonly<Record<string, InventoryTarget>>;
}

/**
 * `ledger` (docs/config.md, docs/accounting.md): where the books are kept and how the ledger process works.
 * Absent: no process books anything (each warns once at start that the books are off); routing is unaffected.
 */
export interface LedgerConfig {
  /** postgres:// URL of the ledger database; its password is a secret (redacted everywhere). */
  readonly databaseUrl: string;
  /** Books booked at once by one ledger process (BullMQ worker concurrency). */
  readonly concurrency: number;
  /** How long a transaction the RPC does not know yet waits before the next look (lagging RPC, not yet mined). */
  readonly receiptRetryDelayMs: number;
  /** Looks for a receipt before the job fails for an operator to see (with the delay: about 1 h by default). */
  readonly receiptAttempts: number;
  /** How often the ledger prices the events it could not price when booked (USD NULL until then). */
  readonly repriceIntervalMs: number;
  /** How often the ledger reconciles the books against the chain up to the confirmed head (docs/accounting.md#reconciliation). */
  readonly reconcileIntervalMs: number;
  /** Connections of the ledger process's pool; the admin's read-only pool uses 2. */
  readonly poolSize: number;
}

export interface RouterConfig {
  readonly adminToken: string;
  readonly routerContractAddress?: string;
  readonly remoteSignerUrl?: string;
  readonly mnemonic?: string;
  readonly chainConfig: Readonly<Record<string, ChainConfig>>;
  readonly swapPools: readonly SwapPool[];
  readonly logLevel: LogLevel;
  readonly port: number;
  readonly host: string;
  readonly network: Network;
  /** Milliseconds (docs/config.md, top-level keys). */
  readonly requestLimit: number;
  readonly cleanUpMode: boolean;
  readonly diagnosticMode: boolean;
  /** The single Redis URL when `redis` is a URL (the default); absent under Sentinel. */
  readonly redisUrl?: string;
  /** Where Redis is: `{ url }` or a Sentinel group (docs/config.md). Every client is built from this. */
  readonly redis: RedisConnectionConfig;
  /** `redis.minReplicas` / `redis.replicaAckTimeoutMs`; absent (config objects built by hand) = minReplicas 0. */
  readonly redisReplication?: RedisReplication;
  /** Prefix of every BullMQ queue and router key in Redis; one per deployment sharing a Redis. */
  readonly redisPrefix: string;
  /** One or more NATS servers, comma-separated in the file. */
  readonly messagingUrl: string;
  readonly authUrl: string;
  /** Base port of the processes' /metrics, /healthz, /readyz servers (offsets: shared/metrics/metrics-port.ts). */
  readonly metricsPort: number;
  /** Address those servers bind; loopback by default. */
  readonly metricsHost: string;
  /** Whether the queue dashboard (/admin/queues) may retry, clean or promote jobs; read-only when false. */
  readonly dashboardActions: boolean;
  /**
   * The books (docs/accounting.md); absent = the books are off: submitters and pollers then name nothing to the
   * `ledger` queue (no process would drain it).
   */
  readonly ledger?: LedgerConfig;
}

/**
 * The environment variables the config reads; anything else in the environment is ignored, except the original
 * router's `NXTP_*` variables (`original`), which are each renamed or refused (shared/config/original-router.ts).
 */
export interface ConfigEnv {
  readonly ROUTER_ADMIN_TOKEN?: string;
  readonly ROUTER_MNEMONIC?: string;
  readonly REDIS_URL?: string;
  /**
   * The address every process binds (admin API and metrics) inside a container, replacing host and metricsHost:
   * the image sets 0.0.0.0, since a published port reaches only the container's own interface; who reaches it
   * from outside is decided by the publishing (docker-compose.yml: 127.0.0.1 only), not by this address.
   */
  readonly ROUTER_CONTAINER_HOST?: string;
  readonly original?: Readonly<Record<string, string>>;
}

/** The result of loading: the frozen config plus warnings to log once a logger exists. */
export interface LoadedConfig {
  readonly config: RouterConfig;
  readonly warnings: readonly string[];
}

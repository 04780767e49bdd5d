import type Joi from "joi";
import { RouterError } from "../errors";
import {
  DEFAULT_CONFIRMATION_TIMEOUT_MS,
  DEFAULT_GAS_BUMP_PERCENT,
  DEFAULT_GAS_PRICE_MAXIMUM_WEI,
  DEFAULT_MAX_GAS_BUMPS,
  DEFAULT_MIN_GAS_WEI,
  DEFAULT_MIN_REPLICAS,
  DEFAULT_REDIS_URL,
  DEFAULT_REPLICA_ACK_TIMEOUT_MS,
  DEFAULT_RELAYER_FEE_THRESHOLD_PERCENT,
  LEDGER_DEFAULTS,
  MESSAGING_DEFAULTS,
  ZERO_ADDRESS,
  defaultSubgraphSyncBuffer,
  recommendedConfirmations,
} from "./defaults";
import { knownDeployments, type KnownDeployment } from "./deployments";
import { isRecord } from "./json-shapes";
import { knownKeysAt, unknownKeyMessage } from "./known-keys";
import { resolveOriginalEnv, translateOriginalKeys } from "./original-router";
import { configSchema } from "./schema";
import type {
  ChainConfig,
  ConfigEnv,
  LedgerConfig,
  LoadedConfig,
  Network,
  RedisConnectionConfig,
  RedisSentinelConfig,
  RouterConfig,
  SwapPool,
} from "./types";

export type { ConfigEnv } from "./types";

/**
 * Every problem of a config, one line each, naming the key path (`chainConfig.1337.providers[0]: ...`), with the
 * warnings found on the way: a problem may concern a key the file spells the original router's way.
 */
export class ConfigError extends RouterError {
  readonly code = "CONFIG_INVALID";
  readonly retriable = false;
  readonly problems: readonly string[];
  readonly warnings: readonly string[];

  constructor(problems: readonly string[], warnings: readonly string[] = []) {
    super(`invalid router config:\n${problems.map((p) => `  ${p}`).join("\n")}`, { problems });
    this.problems = problems;
    this.warnings = warnings;
  }
}

export interface LoadConfigOptions {
  /** Contract addresses per chain; the `@connext/nxtp-contracts` deployments by default. */
  readonly deployments?: ReadonlyMap<number, KnownDeployment>;
}

/**
 * Validates a parsed config file plus the env overrides and returns the effective, frozen config.
 * Pure: it reads no file and connects to nothing, so every process can refuse a bad config before it starts.
 * Every problem is reported in one go: the original router's keys and variables, the schema (an unknown key
 * included), and the rules across keys and chains, which run on whatever the schema could read.
 */
/** The shortest adminToken accepted (docs/config.md). */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

export function loadConfig(raw: unknown, env: ConfigEnv, options: LoadConfigOptions = {}): LoadedConfig {
  if (!isRecord(raw)) {
    throw new ConfigError(["(root): the config must be a JSON object"]);
  }
  const problems: string[] = [];
  const warnings: string[] = [];
  const effectiveEnv = resolveOriginalEnv(env, problems, warnings);
  const { input, renamedPaths } = translateOriginalKeys(raw, problems, warnings);
  const { value, error } = configSchema.validate(applyEnvOverrides(input, effectiveEnv, warnings), {
    abortEarly: false,
    convert: false,
    errors: { label: false },
  });
  for (const detail of error?.details ?? []) {
    problems.push(formatDetail(detail, renamedPaths));
  }
  const deployments = options.deployments ?? knownDeployments();
  // Where the schema failed, `parsed` holds what it could read: each rule below checks the shape it relies on.
  const parsed = value as ParsedConfig;

  checkSignerSource(parsed, problems);
  const redis = buildRedis(parsed, problems);
  const chainConfig = buildChains(parsed.chainConfig, deployments, problems, warnings);
  checkChainOne(parsed.chainConfig, problems);
  checkMetricsSlots(parsed.chainConfig, problems);
  checkSwapPools(parsed.swapPools, parsed.chainConfig, problems, warnings);
  // A short token can be guessed through the API; refused in every network (npm run local generates 48 characters).
  if (typeof parsed.adminToken === "string" && parsed.adminToken.length < MIN_ADMIN_TOKEN_LENGTH) {
    problems.push(
      `adminToken: must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters; use a long random token (e.g. openssl rand -hex 24)`,
    );
  }
  if (problems.length > 0) {
    throw new ConfigError([...new Set(problems)], warnings);
  }

  const network = parsed.network as Network;
  const config: RouterConfig = {
    adminToken: parsed.adminToken,
    routerContractAddress: parsed.routerContractAddress,
    remoteSignerUrl: parsed.remoteSignerUrl,
    mnemonic: parsed.mnemonic,
    chainConfig,
    swapPools: parsed.swapPools,
    logLevel: parsed.logLevel as RouterConfig["logLevel"],
    port: parsed.port,
    host: parsed.host,
    network,
    requestLimit: parsed.requestLimit,
    cleanUpMode: parsed.cleanUpMode,
    diagnosticMode: parsed.diagnosticMode,
    redisUrl: redis !== undefined && "url" in redis ? redis.url : undefined,
    redis: redis ?? { url: DEFAULT_REDIS_URL },
    redisReplication: {
      minReplicas: parsed.redis?.minReplicas ?? DEFAULT_MIN_REPLICAS,
      ackTimeoutMs: parsed.redis?.replicaAckTimeoutMs ?? DEFAULT_REPLICA_ACK_TIMEOUT_MS,
    },
    redisPrefix: parsed.redisPrefix,
    messagingUrl: joinMessagingUrls(parsed.messagingUrl) ?? MESSAGING_DEFAULTS[network].messagingUrl,
    authUrl: parsed.authUrl ?? MESSAGING_DEFAULTS[network].authUrl,
    metricsPort: parsed.metricsPort,
    metricsHost: parsed.metricsHost,
    dashboardActions: parsed.dashboardActions,
    ledger: parsed.ledger === undefined ? undefined : ledgerWithDefaults(parsed.ledger),
  };
  return { config: deepFreeze(withoutUndefined(config)), warnings };
}

interface ParsedChain {
  providers: string[];
  subgraph: string[];
  analyticsSubgraph: string[];
  transactionManagerAddress?: string;
  priceOracleAddress?: string;
  multicallAddress?: string;
  confirmations?: number;
  minGas?: string;
  gasStations: string[];
  allowRelay: boolean;
  allowUnpricedRelay: boolean;
  relayerFeeThreshold?: number;
  subgraphSyncBuffer?: number;
  defaultInitialGasPrice?: string;
  routerContractRelayerAsset?: string;
  gasPriceMaximum?: string;
  gasBumpPercent?: number;
  maxGasBumps?: number;
  confirmationTimeoutMs?: number;
  nativeMainnetEquivalent?: string;
  metricsSlot?: number;
}

interface ParsedConfig {
  adminToken: string;
  routerContractAddress?: string;
  remoteSignerUrl?: string;
  mnemonic?: string;
  chainConfig: Record<string, ParsedChain>;
  swapPools: SwapPool[];
  logLevel: string;
  port: number;
  host: string;
  network: string;
  requestLimit: number;
  cleanUpMode: boolean;
  diagnosticMode: boolean;
  redisUrl?: string;
  redis?: ParsedRedis;
  redisPrefix: string;
  messagingUrl?: string | string[];
  authUrl?: string;
  metricsPort: number;
  metricsHost: string;
  dashboardActions: boolean;
  ledger?: Partial<LedgerConfig> & { databaseUrl: string };
}

/** A `ledger` section with its defaults (also for tools and tests that add the section to a loaded config). */
export function ledgerWithDefaults(ledger: Partial<LedgerConfig> & { databaseUrl: string }): LedgerConfig {
  return {
    databaseUrl: ledger.databaseUrl,
    concurrency: ledger.concurrency ?? LEDGER_DEFAULTS.concurrency,
    receiptRetryDelayMs: ledger.receiptRetryDelayMs ?? LEDGER_DEFAULTS.receiptRetryDelayMs,
    receiptAttempts: ledger.receiptAttempts ?? LEDGER_DEFAULTS.receiptAttempts,
    repriceIntervalMs: ledger.repriceIntervalMs ?? LEDGER_DEFAULTS.repriceIntervalMs,
    reconcileIntervalMs: ledger.reconcileIntervalMs ?? LEDGER_DEFAULTS.reconcileIntervalMs,
    poolSize: ledger.poolSize ?? LEDGER_DEFAULTS.poolSize,
  };
}

/**
 * Secrets may live in the environment instead of the file; the environment wins. A file value it replaces is
 * named in a warning (never the value), so the file never holds a setting that silently has no effect.
 */
function applyEnvOverrides(raw: Record<string, unknown>, env: ConfigEnv, warnings: string[]): Record<string, unknown> {
  const out = { ...raw };
  const replaced = (key: string, variable: string): void => {
    if (raw[key] !== undefined) {
      warnings.push(`${key}: replaced by ${variable} from the environment; the file's value is not used`);
    }
  };
  if (env.ROUTER_ADMIN_TOKEN) {
    replaced("adminToken", "ROUTER_ADMIN_TOKEN");
    out.adminToken = env.ROUTER_ADMIN_TOKEN;
  }
  if (env.ROUTER_MNEMONIC) {
    replaced("mnemonic", "ROUTER_MNEMONIC");
    out.mnemonic = env.ROUTER_MNEMONIC;
  }
  if (env.ROUTER_CONTAINER_HOST) {
    // No warning: the image sets it, and the file's host (127.0.0.1 in config.example.json) is what the compose
    // file publishes on; the admin process logs the address it binds and why (services/admin/start-admin.ts).
    out.host = env.ROUTER_CONTAINER_HOST;
    out.metricsHost = env.ROUTER_CONTAINER_HOST;
  }
  if (env.REDIS_URL) {
    replaced("redisUrl", "REDIS_URL");
    // The environment wins over either form in the file; only where Redis is, not how many replicas must ack.
    const { minReplicas, replicaAckTimeoutMs, ...where } = (isRecord(out.redis) ? out.redis : {}) as Record<
      string,
      unknown
    >;
    if (Object.keys(where).length > 0) {
      warnings.push(`redis: ${Object.keys(where).join(", ")} replaced by REDIS_URL from the environment; not used`);
    }
    delete out.redis;
    delete out.redisUrl;
    if (minReplicas !== undefined || replicaAckTimeoutMs !== undefined) {
      out.redis = { url: env.REDIS_URL, minReplicas, replicaAckTimeoutMs };
    } else {
      out.redisUrl = env.REDIS_URL;
    }
  }
  return out;
}

export function formatPath(path: ReadonlyArray<string | number>): string {
  let out = "";
  for (const part of path) {
    out += typeof part === "number" ? `[${part}]` : out === "" ? part : `.${part}`;
  }
  return out === "" ? "(root)" : out;
}

/**
 * One schema problem. An unknown key names the closest known key of its object; a problem with a renamed key
 * of the original router names the key as the file spells it, then the key it was read as.
 */
function formatDetail(detail: Joi.ValidationErrorItem, renamedPaths: ReadonlyMap<string, string>): string {
  const path = formatPath(detail.path);
  let message = detail.message;
  if (detail.type === "object.unknown") {
    const known = knownKeysAt(configSchema, detail.path.slice(0, -1));
    // chainConfig's keys are patterns (chain ids): its own message says what a key must look like.
    if (known.length > 0) {
      message = unknownKeyMessage(String(detail.path[detail.path.length - 1]), known);
    }
  }
  for (const [to, from] of renamedPaths) {
    if (path === to || path.startsWith(`${to}.`) || path.startsWith(`${to}[`)) {
      return `${from}${path.slice(to.length)} (read as ${path}): ${message}`;
    }
  }
  return `${path}: ${message}`;
}

function checkSignerSource(parsed: ParsedConfig, problems: string[]): void {
  if (parsed.mnemonic !== undefined && parsed.remoteSignerUrl !== undefined) {
    problems.push("remoteSignerUrl: set either remoteSignerUrl or mnemonic, not both");
  } else if (parsed.mnemonic === undefined && parsed.remoteSignerUrl === undefined) {
    problems.push("remoteSignerUrl: a signer is required: set remoteSignerUrl (recommended) or mnemonic");
  }
}

type ParsedRedis = Partial<RedisSentinelConfig> & {
  url?: string;
  cluster?: unknown;
  minReplicas?: number;
  replicaAckTimeoutMs?: number;
};

/** `redisUrl` or `redis`, never both; Sentinel passes through; Redis Cluster is refused with its reason. */
function buildRedis(parsed: ParsedConfig, problems: string[]): RedisConnectionConfig | undefined {
  const { redisUrl, redis } = parsed;
  if (redisUrl !== undefined && redis !== undefined) {
    problems.push("redis: set either redisUrl or redis, not both (REDIS_URL in the environment replaces both)");
    return undefined;
  }
  if (redis === undefined) {
    return { url: redisUrl ?? DEFAULT_REDIS_URL };
  }
  if (!isRecord(redis)) {
    return undefined; // the schema said what is wrong with it
  }
  if (redis.cluster !== undefined) {
    problems.push(clusterProblem(parsed.redisPrefix));
    return undefined;
  }
  if (redis.url !== undefined) {
    return { url: redis.url };
  }
  // The replica settings become config.redisReplication, not connection options.
  const { minReplicas: _minReplicas, replicaAckTimeoutMs: _ackTimeout, ...sentinel } = redis;
  return sentinel as RedisSentinelConfig;
}

/**
 * BullMQ runs multi-key Lua scripts over one queue's keys, which Redis Cluster allows only when every key hashes
 * to one slot: the prefix must carry a hash tag. The router's own scripts (lease, nonce, reservations) mix keys
 * of one prefix the same way. Even then the router's clients are plain or Sentinel clients, not cluster clients.
 */
function clusterProblem(prefix: string): string {
  if (!/\{[^{}]+\}/.test(prefix)) {
    return (
      'redis.cluster: Redis Cluster needs redisPrefix with a hash tag such as "{router}" (BullMQ\'s multi-key ' +
      "scripts need every key of a queue in one slot); and this router does not run on Redis Cluster yet: use Sentinel"
    );
  }
  return "redis.cluster: this router does not run on Redis Cluster yet: use redis.sentinels (docs/config.md)";
}

/** The array form of messagingUrl becomes the comma-separated string the messaging client splits. */
function joinMessagingUrls(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.map((v) => v.trim()).join(",") : value;
}

/** Each chain with its defaults; a chain the schema found no object for, or no chain id, is skipped. */
function buildChains(
  chains: Record<string, ParsedChain> | undefined,
  deployments: ReadonlyMap<number, KnownDeployment>,
  problems: string[],
  warnings: string[],
): Record<string, ChainConfig> {
  const out: Record<string, ChainConfig> = {};
  for (const [key, chain] of Object.entries(isRecord(chains) ? chains : {})) {
    if (!isRecord(chain) || !/^[0-9]+$/.test(key)) {
      continue;
    }
    const chainId = Number(key);
    const known = deployments.get(chainId) ?? {};
    const transactionManagerAddress = chain.transactionManagerAddress ?? known.transactionManagerAddress;
    if (!transactionManagerAddress) {
      problems.push(
        `chainConfig.${key}.transactionManagerAddress: no TransactionManager deployment is known for chain ${key}; set the address`,
      );
      continue;
    }
    const recommended = recommendedConfirmations(chainId);
    if (typeof chain.confirmations === "number" && chain.confirmations < recommended) {
      warnings.push(
        `chainConfig.${key}.confirmations: ${chain.confirmations} is below the recommended ${recommended} for chain ${key}`,
      );
    }
    out[key] = {
      chainId,
      providers: chain.providers,
      subgraph: chain.subgraph,
      analyticsSubgraph: chain.analyticsSubgraph,
      transactionManagerAddress,
      priceOracleAddress: chain.priceOracleAddress ?? known.priceOracleAddress,
      multicallAddress: chain.multicallAddress ?? known.multicallAddress,
      confirmations: chain.confirmations ?? recommended,
      minGas: chain.minGas ?? DEFAULT_MIN_GAS_WEI,
      gasStations: chain.gasStations,
      allowRelay: chain.allowRelay,
      allowUnpricedRelay: chain.allowUnpricedRelay,
      relayerFeeThreshold: chain.relayerFeeThreshold ?? DEFAULT_RELAYER_FEE_THRESHOLD_PERCENT,
      subgraphSyncBuffer: chain.subgraphSyncBuffer ?? defaultSubgraphSyncBuffer(chainId),
      defaultInitialGasPrice: chain.defaultInitialGasPrice,
      routerContractRelayerAsset: chain.routerContractRelayerAsset ?? ZERO_ADDRESS,
      gasPriceMaximum: chain.gasPriceMaximum ?? DEFAULT_GAS_PRICE_MAXIMUM_WEI,
      gasBumpPercent: chain.gasBumpPercent ?? DEFAULT_GAS_BUMP_PERCENT,
      maxGasBumps: chain.maxGasBumps ?? DEFAULT_MAX_GAS_BUMPS,
      confirmationTimeoutMs: chain.confirmationTimeoutMs ?? DEFAULT_CONFIRMATION_TIMEOUT_MS,
      nativeMainnetEquivalent: chain.nativeMainnetEquivalent,
      metricsSlot: chain.metricsSlot,
    };
  }
  return out;
}

/** Two chains pinned to one metrics slot would have their processes fight over one port. */
function checkMetricsSlots(chains: Record<string, ParsedChain> | undefined, problems: string[]): void {
  const owner = new Map<number, string>();
  for (const [key, chain] of Object.entries(isRecord(chains) ? chains : {})) {
    const slot = isRecord(chain) ? chain.metricsSlot : undefined;
    if (typeof slot !== "number") {
      continue;
    }
    const other = owner.get(slot);
    if (other !== undefined) {
      problems.push(`chainConfig.${key}.metricsSlot: ${slot} is also chain ${other}'s; each chain needs its own slot`);
    } else {
      owner.set(slot, key);
    }
  }
}

/** docs/config.md (top-level keys): gas reimbursement prices are read on chain 1, so it needs a provider even with no pool there. */
function checkChainOne(chains: Record<string, ParsedChain> | undefined, problems: string[]): void {
  if (isRecord(chains) && !Object.hasOwn(chains, "1")) {
    problems.push(
      "chainConfig.1: chain 1 must be configured with at least one provider (gas prices are read on chain 1)",
    );
  }
}

/** Every pool asset's chain is configured; a pool or asset the schema could not read is skipped. */
function checkSwapPools(
  pools: readonly SwapPool[] | undefined,
  chains: Record<string, ParsedChain> | undefined,
  problems: string[],
  warnings: string[],
): void {
  if (!Array.isArray(pools)) {
    return;
  }
  if (pools.length === 0) {
    warnings.push("swapPools: no swap pools configured; the router will not bid");
  }
  pools.forEach((pool: unknown, poolIndex) => {
    if (!isRecord(pool) || !Array.isArray(pool.assets)) {
      return;
    }
    const seen = new Set<string>();
    pool.assets.forEach((asset: unknown, assetIndex) => {
      if (!isRecord(asset) || typeof asset.chainId !== "number") {
        return;
      }
      if (isRecord(chains) && !Object.hasOwn(chains, String(asset.chainId))) {
        problems.push(
          `swapPools[${poolIndex}].assets[${assetIndex}].chainId: chain ${asset.chainId} is not in chainConfig`,
        );
      }
      const key = `${asset.chainId}-${String(asset.assetId)}`;
      if (seen.has(key)) {
        warnings.push(
          `swapPools[${poolIndex}].assets[${assetIndex}]: duplicate asset ${String(asset.assetId)} on chain ${asset.chainId}`,
        );
      }
      seen.add(key);
    });
    checkInventory(pool, poolIndex, problems);
  });
}

/** How far a pool's targets may add up from 100 % (rounding of thirds and the like). */
export const INVENTORY_TARGET_SUM_TOLERANCE_PERCENT = 0.01;

/**
 * docs/config.md, "Inventory targets": each key a chain of the pool holding one asset of it, every chain of the
 * pool with an entry, minimum ≤ target, targets adding up to 100 %. Ranges and the floor's digits are the schema's.
 */
function checkInventory(pool: Record<string, unknown>, poolIndex: number, problems: string[]): void {
  const inventory = pool.inventory;
  if (!isRecord(inventory) || !Array.isArray(pool.assets)) {
    return;
  }
  const path = `swapPools[${poolIndex}].inventory`;
  const assetsPerChain = new Map<string, number>();
  for (const asset of pool.assets as unknown[]) {
    if (isRecord(asset) && typeof asset.chainId === "number") {
      const chain = String(asset.chainId);
      assetsPerChain.set(chain, (assetsPerChain.get(chain) ?? 0) + 1);
    }
  }
  let sum = 0;
  for (const [chain, target] of Object.entries(inventory)) {
    const count = assetsPerChain.get(chain);
    if (count === undefined) {
      problems.push(`${path}.${chain}: chain ${chain} has no asset in this pool`);
    } else if (count > 1) {
      problems.push(`${path}.${chain}: the pool has ${count} assets on chain ${chain}; a target needs exactly one`);
    }
    if (!isRecord(target)) continue;
    const { targetPercent, minimumPercent } = target;
    if (typeof targetPercent === "number") sum += targetPercent;
    if (typeof targetPercent === "number" && typeof minimumPercent === "number" && minimumPercent > targetPercent) {
      problems.push(
        `${path}.${chain}.minimumPercent: ${minimumPercent} is above the chain's targetPercent ${targetPercent}`,
      );
    }
  }
  for (const chain of assetsPerChain.keys()) {
    if (!Object.hasOwn(inventory, chain)) {
      problems.push(`${path}.${chain}: chain ${chain} of the pool has no target (every chain of the pool needs one)`);
    }
  }
  if (Math.abs(sum - 100) > INVENTORY_TARGET_SUM_TOLERANCE_PERCENT) {
    problems.push(`${path}: the chains' targetPercent add up to ${sum}, not 100`);
  }
}

function withoutUndefined<T extends object>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const v of Object.values(value)) {
      deepFreeze(v);
    }
    Object.freeze(value);
  }
  return value;
}

import {
  DEFAULT_MIN_REPLICAS,
  DEFAULT_REDIS_URL,
  DEFAULT_REPLICA_ACK_TIMEOUT_MS,
  MESSAGING_DEFAULTS,
} from "./defaults";
import { buildChains, checkChainOne, checkMetricsSlots } from "./chain-config";
import { ConfigError } from "./config-error";
import { knownDeployments, type KnownDeployment } from "./deployments";
import { applyEnvOverrides } from "./env-overrides";
import { isRecord } from "./json-shapes";
import { ledgerWithDefaults } from "./ledger-config";
import { resolveOriginalEnv, translateOriginalKeys } from "./original-router";
import type { ParsedConfig } from "./parsed-config";
import { checkSwapPools } from "./pool-checks";
import { buildRedis } from "./redis-config";
import { configSchema } from "./schema";
import { formatDetail } from "./schema-problems";
import type { ConfigEnv, LoadedConfig, Network, RouterConfig } from "./types";

export type { ConfigEnv } from "./types";

export interface LoadConfigOptions {
  /** Contract addresses per chain; the `@connext/nxtp-contracts` deployments by default. */
  readonly deployments?: ReadonlyMap<number, KnownDeployment>;
}

/** The shortest adminToken accepted (docs/config.md). */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/**
 * Validates a parsed config file plus the env overrides and returns the effective, frozen config.
 * Pure: it reads no file and connects to nothing, so every process can refuse a bad config before it starts.
 * Every problem is reported in one go: the original router's keys and variables, the schema (an unknown key
 * included), and the rules across keys and chains, which run on whatever the schema could read.
 */
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

function checkSignerSource(parsed: ParsedConfig, problems: string[]): void {
  if (parsed.mnemonic !== undefined && parsed.remoteSignerUrl !== undefined) {
    problems.push("remoteSignerUrl: set either remoteSignerUrl or mnemonic, not both");
  } else if (parsed.mnemonic === undefined && parsed.remoteSignerUrl === undefined) {
    problems.push("remoteSignerUrl: a signer is required: set remoteSignerUrl (recommended) or mnemonic");
  }
}

/** The array form of messagingUrl becomes the comma-separated string the messaging client splits. */
function joinMessagingUrls(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.map((v) => v.trim()).join(",") : value;
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

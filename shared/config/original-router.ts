import { isRecord } from "./json-shapes";
import type { ConfigEnv } from "./types";

/**
 * The original NXTP v0 router's config keys and environment variables, each with the decision docs/config.md
 * records: renamed (read under our name, with a warning naming it), ignored (a warning; only where the key
 * cannot change what this router does), or refused (an error naming what to set instead). They are translated
 * before the schema runs; whatever is left that the schema does not know is an unknown key, an error.
 */
type Decision =
  | { readonly renamed: string }
  | {
      readonly ignored: string;
      readonly unless?: { readonly harmless: (value: unknown) => boolean; readonly refused: string };
    }
  | { readonly refused: string };

const TOP_LEVEL: Readonly<Record<string, Decision>> = {
  web3SignerUrl: { renamed: "remoteSignerUrl" },
  natsUrl: { renamed: "messagingUrl" },
  metrics_host: { renamed: "metricsHost" },
  metrics_port: {
    refused:
      "its one /metrics port has no equivalent: every process here serves /metrics on its own port derived from metricsPort (docs/operating.md); set metricsPort",
  },
  allowRelay: {
    ignored: "false is this router's default",
    unless: {
      harmless: (value) => value === false,
      refused: "relaying is switched on per chain here: set chainConfig.<chainId>.allowRelay on each chain to relay on",
    },
  },
  allowedTolerance: {
    ignored: "this router's tolerance is fixed at 10 %",
    unless: {
      harmless: (value) => value === 10,
      refused: "this router's tolerance is fixed at 10 % (docs/config.md); remove the key",
    },
  },
  overbidAllowance: {
    ignored: "this router never promises more than its liquidity (docs/auction.md), stricter than any allowance",
  },
  priceCacheMode: { ignored: "prices are always cached here, as they always were in the original" },
  overridechainRecommendedConfirmations: {
    ignored: "confirmations below the recommended value are a warning here, never an error",
  },
};

const CHAIN: Readonly<Record<string, Decision>> = {
  allowFulfillRelay: { renamed: "allowRelay" },
  confirmationTimeout: { renamed: "confirmationTimeoutMs" },
  gasPriceReplacementBumpPercent: { renamed: "gasBumpPercent" },
  gelatoOracle: { ignored: "this router sends Router-contract calls itself and never asks Gelato" },
  syncProvidersInterval: { ignored: "every provider's head is re-read on a fixed schedule of a few seconds here" },
  debug_logRpcCalls: { ignored: "a debugging switch of the original; this router keeps no per-call RPC log" },
  gasPriceInitialBoostPercent: {
    refused:
      "no boost is added to the first gas price here; remove it (gasPriceMaximum and gasBumpPercent bound the price)",
  },
  gasPriceMinimum: {
    refused: "there is no gas price floor here; remove it, or set defaultInitialGasPrice for a fallback price",
  },
  gasPriceMaxIncreaseScalar: {
    refused: "no such cap here; remove it (gasPriceMaximum bounds every price, bumps included)",
  },
  hardcodedGasPrice: {
    refused: "a fixed gas price is not supported; remove it, or set defaultInitialGasPrice for a fallback price",
  },
  gasLimitInflation: { refused: "gas limits are not inflated here; remove it" },
  maxProviderCPS: {
    refused: "provider calls are not rate-limited here; remove it, or use a provider without the limit",
  },
};

/** The variables the original read, with the variable or config key that takes each one's place. */
const ENVIRONMENT: Readonly<Record<string, Decision>> = {
  NXTP_ADMIN_TOKEN: { renamed: "ROUTER_ADMIN_TOKEN" },
  NXTP_MNEMONIC: { renamed: "ROUTER_MNEMONIC" },
  NXTP_CONFIG_FILE: { refused: "set ROUTER_CONFIG_FILE instead" },
  NXTP_CONFIG: { refused: "the config is read from one file only: write it there (ROUTER_CONFIG_FILE)" },
  NXTP_NETWORK: { refused: "set network in the config file" },
  NXTP_AUTH_URL: { refused: "set authUrl in the config file" },
  NXTP_NATS_URL: { refused: "set messagingUrl in the config file" },
  NXTP_WEB3_SIGNER_URL: { refused: "set remoteSignerUrl in the config file" },
  NXTP_ROUTER_CONTRACT_ADDRESS: { refused: "set routerContractAddress in the config file" },
  NXTP_CHAIN_CONFIG: { refused: "set chainConfig in the config file" },
  NXTP_SWAP_POOLS: { refused: "set swapPools in the config file" },
  NXTP_LOG_LEVEL: { refused: "set logLevel in the config file" },
  NXTP_PORT: { refused: "set port in the config file" },
  NXTP_HOST: { refused: "set host in the config file" },
  NXTP_METRICS_PORT: { refused: "set metricsPort in the config file (a base port, docs/operating.md)" },
  NXTP_METRICS_HOST: { refused: "set metricsHost in the config file" },
  NXTP_REQUEST_LIMIT: { refused: "set requestLimit in the config file" },
  NXTP_CLEAN_UP_MODE: { refused: "set cleanUpMode in the config file" },
  NXTP_DIAGNOSTIC_MODE: { refused: "set diagnosticMode in the config file" },
  NXTP_ALLOW_RELAY: { refused: "set chainConfig.<chainId>.allowRelay in the config file" },
  NXTP_ALLOWED_TOLERANCE: { refused: "this router's tolerance is fixed at 10 %; unset it" },
  NXTP_PRICE_CACHE_MODE: { refused: "prices are always cached here; unset it" },
  NXTP_OVERBID_ALLOWANCE: { refused: "this router never promises more than its liquidity; unset it" },
  NXTP_OVERRIDE_CHAIN_RECOMMENDED_CONFIRMATIONS: {
    refused: "confirmations below the recommended value are a warning here; unset it",
  },
};

const ORIGINAL_ENV_PREFIX = "NXTP_";

/** The original's variables present in `env` (empty ones count as unset, as the original's `||` did). */
export function originalEnvOf(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith(ORIGINAL_ENV_PREFIX) && value) {
      out[name] = value;
    }
  }
  return out;
}

/**
 * The environment after the original's variables: a renamed one supplies ours when ours is unset (the same
 * value set twice is fine, two different ones an error); every other `NXTP_*` variable is refused, so a setting
 * the router would not read never passes. Messages name variables, never values.
 */
export function resolveOriginalEnv(env: ConfigEnv, problems: string[], warnings: string[]): ConfigEnv {
  const out: Record<string, unknown> = { ...env };
  for (const [name, value] of Object.entries(env.original ?? {})) {
    const decision = ENVIRONMENT[name];
    if (decision === undefined) {
      problems.push(`(env) ${name}: not read by this router (nor by the original); unset it`);
    } else if ("renamed" in decision) {
      const ours = env[decision.renamed as keyof ConfigEnv];
      if (ours !== undefined && ours !== "" && ours !== value) {
        problems.push(
          `(env) ${name}: the original router's name for ${decision.renamed}, which is set to another value; unset one`,
        );
      } else {
        out[decision.renamed] = value;
        warnings.push(`(env) ${name}: the original router's name, read as ${decision.renamed}; rename it`);
      }
    } else {
      problems.push(
        `(env) ${name}: the original router's variable, not read here: ${"refused" in decision ? decision.refused : decision.ignored}`,
      );
    }
  }
  return out as ConfigEnv;
}

export interface Translation {
  /** The file with the original's keys removed, renamed ones under our names. */
  readonly input: Record<string, unknown>;
  /** Path of a renamed key as the schema sees it → as the file has it, so a problem names the file's key. */
  readonly renamedPaths: ReadonlyMap<string, string>;
}

/** Translates the original's keys at the top level, in each chain and in each pool; never mutates `raw`. */
export function translateOriginalKeys(
  raw: Record<string, unknown>,
  problems: string[],
  warnings: string[],
): Translation {
  const renamedPaths = new Map<string, string>();
  const input = translateObject(raw, "", TOP_LEVEL, { problems, warnings, renamedPaths });
  if (isRecord(input.chainConfig)) {
    const chains: Record<string, unknown> = {};
    for (const [chainId, chain] of Object.entries(input.chainConfig)) {
      chains[chainId] = isRecord(chain)
        ? translateObject(chain, `chainConfig.${chainId}.`, CHAIN, { problems, warnings, renamedPaths })
        : chain;
    }
    input.chainConfig = chains;
  }
  if (Array.isArray(input.swapPools)) {
    input.swapPools = input.swapPools.map((pool: unknown, i) =>
      isRecord(pool) ? movePoolMainnetEquivalent(pool, i, { problems, warnings, renamedPaths }) : pool,
    );
  }
  return { input, renamedPaths };
}

interface Sink {
  readonly problems: string[];
  readonly warnings: string[];
  readonly renamedPaths: Map<string, string>;
}

function translateObject(
  object: Record<string, unknown>,
  prefix: string,
  decisions: Readonly<Record<string, Decision>>,
  sink: Sink,
): Record<string, unknown> {
  const out = { ...object };
  for (const [key, value] of Object.entries(object)) {
    const decision = Object.hasOwn(decisions, key) ? decisions[key] : undefined;
    if (decision === undefined) {
      continue;
    }
    delete out[key];
    const path = `${prefix}${key}`;
    if ("renamed" in decision) {
      const to = `${prefix}${decision.renamed}`;
      if (object[decision.renamed] !== undefined) {
        sink.problems.push(
          `${path}: the original router's name for ${decision.renamed}, which is set too; keep only ${decision.renamed}`,
        );
        continue;
      }
      out[decision.renamed] = value;
      sink.renamedPaths.set(to, path);
      sink.warnings.push(`${path}: the original router's key, read as ${to}; rename it (docs/config.md)`);
    } else if ("refused" in decision) {
      sink.problems.push(`${path}: the original router's key, not read here: ${decision.refused}`);
    } else if (decision.unless !== undefined && !decision.unless.harmless(value)) {
      sink.problems.push(`${path}: the original router's key, not read here: ${decision.unless.refused}`);
    } else {
      sink.warnings.push(`${path}: the original router's key, ignored: ${decision.ignored}; remove it`);
    }
  }
  return out;
}

/**
 * The original put `mainnetEquivalent` on the pool; ours is per asset. The pool's value becomes the value of each
 * of its assets not on chain 1 (an asset on chain 1 is priced at its own address there), unless the asset sets
 * its own; an asset whose own value differs is an error, not a silent choice between the two.
 */
function movePoolMainnetEquivalent(
  pool: Record<string, unknown>,
  poolIndex: number,
  sink: Sink,
): Record<string, unknown> {
  if (!Object.hasOwn(pool, "mainnetEquivalent")) {
    return pool;
  }
  const { mainnetEquivalent: value, ...out } = pool;
  const path = `swapPools[${poolIndex}].mainnetEquivalent`;
  if (!Array.isArray(pool.assets)) {
    sink.problems.push(`${path}: the original router's pool-level key; set mainnetEquivalent on each asset instead`);
    return out;
  }
  const moved: string[] = [];
  out.assets = pool.assets.map((asset: unknown, assetIndex) => {
    if (!isRecord(asset) || asset.chainId === 1) {
      return asset;
    }
    const assetPath = `swapPools[${poolIndex}].assets[${assetIndex}].mainnetEquivalent`;
    if (asset.mainnetEquivalent === undefined) {
      moved.push(`assets[${assetIndex}]`);
      sink.renamedPaths.set(assetPath, path);
      return { ...asset, mainnetEquivalent: value };
    }
    if (
      typeof asset.mainnetEquivalent !== "string" ||
      typeof value !== "string" ||
      asset.mainnetEquivalent.toLowerCase() !== value.toLowerCase()
    ) {
      sink.problems.push(`${assetPath}: differs from ${path} (the original router's pool-level key); keep one`);
    }
    return asset;
  });
  sink.warnings.push(
    `${path}: the original router's pool-level key, read as mainnetEquivalent of ${moved.length > 0 ? moved.join(", ") : "no asset"}; move it onto the assets (docs/config.md)`,
  );
  return out;
}

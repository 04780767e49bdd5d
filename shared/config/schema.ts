import Joi from "joi";
import { getAddress, Mnemonic } from "ethers";
import { LOG_LEVELS } from "../logging/create-logger";
import { DEFAULT_REDIS_PREFIX } from "./defaults";

/**
 * The config file's shape (docs/config.md: top-level keys, chain object, swap pools). Every object is closed:
 * an unknown key is an error (known-keys.ts words it with the closest known key), so a typo never falls back to
 * a default. The original router's keys are translated before this schema runs (original-router.ts). Cross-key
 * rules that need more than one value (signer source, chain 1, pool chains, contract defaults) live in
 * load-config.ts, chain-config.ts and pool-checks.ts.
 * No message may echo a value: the file holds secrets. Joi's pattern messages do, so every pattern here
 * carries its own message.
 */

const address = (): Joi.StringSchema =>
  Joi.string()
    .custom((value: string, helpers) => {
      try {
        return getAddress(value);
      } catch {
        return helpers.error("address.invalid");
      }
    })
    .messages({
      "address.invalid":
        "must be a valid address (0x and 40 hex digits; a mixed-case address must have a valid checksum)",
    });

const decimalIntegerString = (): Joi.StringSchema =>
  Joi.string()
    .pattern(/^[0-9]+$/)
    .messages({ "string.pattern.base": "must be a decimal integer string (wei, digits only)" });

const httpUrl = (): Joi.StringSchema => Joi.string().uri({ scheme: ["http", "https"] });
const providerUrl = (): Joi.StringSchema => Joi.string().uri({ scheme: ["http", "https", "ws", "wss"] });

const urlList = (item: () => Joi.StringSchema): Joi.ArraySchema => Joi.array().items(item()).single();

/** One or more NATS servers: nats:// for node clients, ws(s):// for websocket gateways. */
const messagingUrl = (): Joi.StringSchema =>
  Joi.string()
    .custom((value: string, helpers) => {
      const parts = value.split(",").map((p) => p.trim());
      for (const part of parts) {
        const check = Joi.string()
          .uri({ scheme: ["nats", "ws", "wss"] })
          .validate(part);
        if (check.error) {
          return helpers.error("messagingUrl.invalid");
        }
      }
      return parts.join(",");
    })
    .messages({ "messagingUrl.invalid": "must be one or more comma-separated nats://, ws:// or wss:// URLs" });

/** The array form of messagingUrl: one nats:// (or ws(s)://) URL per item; load-config joins them. */
const messagingUrlList = (): Joi.ArraySchema =>
  Joi.array()
    .items(Joi.string().uri({ scheme: ["nats", "ws", "wss"] }))
    .min(1)
    .messages({ "string.uriCustomScheme": "must be a nats://, ws:// or wss:// URL" });

const redisTls = (): Joi.AlternativesSchema =>
  Joi.alternatives().try(
    Joi.boolean(),
    Joi.object({
      ca: Joi.string(),
      cert: Joi.string(),
      key: Joi.string(),
      servername: Joi.string().hostname(),
      rejectUnauthorized: Joi.boolean(),
    }).unknown(false),
  );

/**
 * `redis`: either `{ url }` or a Sentinel group. `cluster` is accepted here only so that redis-config.ts can refuse
 * it with the reason (docs/config.md). Messages never echo values (passwords).
 */
const redisConnection = (): Joi.ObjectSchema =>
  Joi.object({
    url: Joi.string().uri({ scheme: ["redis", "rediss"] }),
    sentinels: Joi.array()
      .items(
        Joi.object({
          host: Joi.string().hostname().required(),
          port: Joi.number().integer().min(1).max(65535).required(),
        }).unknown(false),
      )
      .min(1),
    name: Joi.string().min(1),
    username: Joi.string().min(1),
    password: Joi.string().min(1),
    sentinelUsername: Joi.string().min(1),
    sentinelPassword: Joi.string().min(1),
    db: Joi.number().integer().min(0).max(15),
    tls: redisTls(),
    sentinelTls: redisTls(),
    cluster: Joi.any(),
    // Either form: replicas that must acknowledge the writes a broadcast or a bid relies on (docs/scaling.md).
    minReplicas: Joi.number().integer().min(0).max(16),
    replicaAckTimeoutMs: Joi.number().integer().min(1).max(60_000),
  })
    .unknown(false)
    .xor("url", "sentinels", "cluster")
    .with("sentinels", "name")
    .without("url", [
      "name",
      "username",
      "password",
      "sentinelUsername",
      "sentinelPassword",
      "db",
      "tls",
      "sentinelTls",
    ])
    .messages({
      "object.missing": "must have either url or sentinels (with name)",
      "object.xor": "set either url or sentinels, not both",
      "object.with": "sentinels needs name (the primary's name in `sentinel monitor`)",
      "object.without":
        "with url, put credentials, db and TLS (rediss://) in the URL; the other keys are for sentinels",
    });

/** `ledger`: the books' PostgreSQL and the ledger process's pace (docs/config.md). No message echoes the URL. */
const ledgerSchema = Joi.object({
  databaseUrl: Joi.string()
    .uri({ scheme: ["postgres", "postgresql"] })
    .required()
    .messages({
      "string.uri": "must be a postgres:// or postgresql:// URL",
      "string.uriCustomScheme": "must be a postgres:// or postgresql:// URL",
    }),
  concurrency: Joi.number().integer().min(1).max(64),
  receiptRetryDelayMs: Joi.number().integer().min(100).max(3_600_000),
  receiptAttempts: Joi.number().integer().min(1).max(100_000),
  repriceIntervalMs: Joi.number().integer().min(1_000).max(86_400_000),
  reconcileIntervalMs: Joi.number().integer().min(1_000).max(86_400_000),
  poolSize: Joi.number().integer().min(1).max(100),
}).unknown(false);

const mnemonic = (): Joi.StringSchema =>
  Joi.string()
    .custom((value: string, helpers) =>
      Mnemonic.isValidMnemonic(value.trim()) ? value.trim() : helpers.error("mnemonic.invalid"),
    )
    .messages({ "mnemonic.invalid": "must be a valid BIP-39 mnemonic phrase" });

export const chainSchema = Joi.object({
  providers: urlList(providerUrl).min(1).required(),
  subgraph: urlList(httpUrl).default([]),
  analyticsSubgraph: urlList(httpUrl).default([]),
  transactionManagerAddress: address(),
  priceOracleAddress: address(),
  multicallAddress: address(),
  confirmations: Joi.number().integer().min(1),
  minGas: decimalIntegerString(),
  gasStations: urlList(httpUrl).default([]),
  allowRelay: Joi.boolean().default(false),
  allowUnpricedRelay: Joi.boolean().default(false),
  relayerFeeThreshold: Joi.number().min(0).max(100),
  subgraphSyncBuffer: Joi.number().integer().min(1),
  defaultInitialGasPrice: decimalIntegerString(),
  routerContractRelayerAsset: address(),
  gasPriceMaximum: decimalIntegerString(),
  gasBumpPercent: Joi.number().integer().min(10).max(100),
  maxGasBumps: Joi.number().integer().min(0).max(20),
  confirmationTimeoutMs: Joi.number().integer().min(1000),
  // Pins this chain's submitter and poller metrics ports (shared/metrics/metrics-port.ts), so adding a chain
  // never moves them; unique across chains.
  metricsSlot: Joi.number().integer().min(0).max(63),
  nativeMainnetEquivalent: address(),
}).unknown(false);

const assetSchema = Joi.object({
  assetId: address().required(),
  chainId: Joi.number().integer().min(1).required(),
  mainnetEquivalent: address(),
}).unknown(false);

const percent = (): Joi.NumberSchema => Joi.number().min(0).max(100);

/** One chain's inventory target (docs/config.md, "Inventory targets"); the rules across chains are in pool-checks.ts. */
const inventoryTargetSchema = Joi.object({
  targetPercent: percent().required(),
  minimumPercent: percent().required(),
  floor: decimalIntegerString().default("0"),
}).unknown(false);

const swapPoolSchema = Joi.object({
  name: Joi.string().min(1),
  assets: Joi.array().items(assetSchema).min(2).required(),
  inventory: Joi.object()
    .pattern(/^[0-9]+$/, inventoryTargetSchema)
    .min(2)
    .messages({ "object.unknown": 'is not a decimal chain id (inventory keys are chain ids such as "1")' }),
}).unknown(false);

export const configSchema = Joi.object({
  adminToken: Joi.string().required(),
  routerContractAddress: address(),
  remoteSignerUrl: httpUrl(),
  mnemonic: mnemonic(),
  chainConfig: Joi.object()
    .pattern(/^[0-9]+$/, chainSchema)
    .min(1)
    .required()
    .messages({ "object.unknown": 'is not a decimal chain id (chainConfig keys are chain ids such as "1")' }),
  swapPools: Joi.array().items(swapPoolSchema).required(),
  logLevel: Joi.string()
    .valid(...Object.keys(LOG_LEVELS), "silent")
    .default("info"),
  port: Joi.number().integer().min(1).max(65535).default(8080),
  host: Joi.string().hostname().default("0.0.0.0"),
  network: Joi.string().valid("mainnet", "testnet", "local").default("mainnet"),
  requestLimit: Joi.number().integer().min(0).default(500),
  cleanUpMode: Joi.boolean().default(false),
  diagnosticMode: Joi.boolean().default(false),
  redisUrl: Joi.string().uri({ scheme: ["redis", "rediss"] }),
  redis: redisConnection(),
  redisPrefix: Joi.string()
    .pattern(/^[A-Za-z0-9_.{}-]+$/)
    .default(DEFAULT_REDIS_PREFIX)
    .messages({ "string.pattern.base": "must hold only letters, digits, '_', '-', '.', '{' and '}' (no ':')" }),
  messagingUrl: Joi.alternatives().try(messagingUrl(), messagingUrlList()).messages({
    "alternatives.types": "must be a comma-separated string or an array of nats://, ws:// or wss:// URLs",
  }),
  authUrl: httpUrl(),
  // Base of every process's /metrics port (shared/metrics/metrics-port.ts adds a per-role, per-chain offset).
  metricsPort: Joi.number().integer().min(1).max(60000).default(9460),
  metricsHost: Joi.string().hostname().default("127.0.0.1"),
  dashboardActions: Joi.boolean().default(false),
  ledger: ledgerSchema,
}).unknown(false);

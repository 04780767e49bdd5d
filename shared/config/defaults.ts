import type { Network } from "./types";

/** Messaging endpoints per network (docs/protocol.md#endpoints); `local` points at loopback. */
export const MESSAGING_DEFAULTS: Readonly<Record<Network, { messagingUrl: string; authUrl: string }>> = {
  mainnet: {
    messagingUrl:
      "nats://nats1.connext.provide.network:4222,nats://nats2.connext.provide.network:4222,nats://nats3.connext.provide.network:4222",
    authUrl: "https://auth.connext.network",
  },
  testnet: {
    messagingUrl:
      "nats://nats1.connext.provide.network:4222,nats://nats2.connext.provide.network:4222,nats://nats3.connext.provide.network:4222",
    authUrl: "https://auth.connext.network",
  },
  local: { messagingUrl: "nats://127.0.0.1:4222", authUrl: "http://127.0.0.1:5040" },
};

export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
export const DEFAULT_REDIS_PREFIX = "router";
/** `redis.minReplicas`: 0 = today's asynchronous replication, nothing waits for replicas. */
export const DEFAULT_MIN_REPLICAS = 0;
/** `redis.replicaAckTimeoutMs`: well above a replica's round trip on a LAN, below the sender lease TTL + a bid's budget. */
export const DEFAULT_REPLICA_ACK_TIMEOUT_MS = 1_000;
/** `ledger.*` defaults (docs/config.md). A receipt is looked for every 15 s for an hour before the job fails. */
export const LEDGER_DEFAULTS = {
  concurrency: 4,
  receiptRetryDelayMs: 15_000,
  receiptAttempts: 240,
  repriceIntervalMs: 600_000,
  reconcileIntervalMs: 600_000,
  poolSize: 5,
} as const;
export const DEFAULT_MIN_GAS_WEI = "100000000000000000";
export const DEFAULT_RELAYER_FEE_THRESHOLD_PERCENT = 10;
export const MIN_SUBGRAPH_SYNC_BUFFER_BLOCKS = 25;
/** The original txservice's defaults (docs/protocol.md#gas-price): 1500 gwei ceiling, +20 % per bump, 90 s. */
export const DEFAULT_GAS_PRICE_MAXIMUM_WEI = "1500000000000";
export const DEFAULT_GAS_BUMP_PERCENT = 20;
export const DEFAULT_MAX_GAS_BUMPS = 5;
export const DEFAULT_CONFIRMATION_TIMEOUT_MS = 90_000;
export const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/**
 * Recommended confirmations per chain: the connext/chaindata snapshot the original shipped with
 * (docs/protocol.md#confirmations). Local development chains need one: anvil mines on demand and no re-org happens.
 */
const RECOMMENDED_CONFIRMATIONS: Readonly<Record<number, number>> = {
  1: 7,
  3: 1,
  4: 3,
  5: 1,
  10: 1,
  25: 10,
  42: 3,
  56: 10,
  69: 1,
  97: 1,
  100: 10,
  122: 10,
  128: 10,
  137: 60,
  250: 20,
  288: 1,
  1284: 10,
  1285: 10,
  1287: 10,
  2001: 10,
  2221: 1,
  9001: 10,
  42161: 1,
  43113: 10,
  43114: 10,
  80001: 1,
  421611: 1,
  192837465: 10,
  1666600000: 10,
  1337: 1,
  1338: 1,
  31337: 1,
};
/** Chains missing from chain data got chain 1's value + 3 in the original. */
const UNLISTED_CHAIN_CONFIRMATIONS = 10;

export function recommendedConfirmations(chainId: number): number {
  return RECOMMENDED_CONFIRMATIONS[chainId] ?? UNLISTED_CHAIN_CONFIRMATIONS;
}

/** The original's rule: three times the recommended confirmations, never below 25 blocks. */
export function defaultSubgraphSyncBuffer(chainId: number): number {
  return Math.max(3 * recommendedConfirmations(chainId), MIN_SUBGRAPH_SYNC_BUFFER_BLOCKS);
}

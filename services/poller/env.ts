import type { RouterConfig } from "../../shared/config/types";
import { chainConfigFor, readChainIdsEnv, readOptionalIntegerEnv } from "../../shared/process/process-env";
import type { PollerOptions } from "./start-poller";

export interface PollerEnv {
  /** The chains this process polls, in CHAIN_ID's order: one independent poller (lease, loop, cursor) each. */
  readonly chainIds: readonly number[];
  readonly options: PollerOptions;
}

/**
 * The process's own settings, from the environment (one config file serves every chain's process):
 * - CHAIN_ID (required): the chain this process polls, or a comma-separated list of them (`1337,1338`); each must
 *   be a key of chainConfig. The tuning below applies to each chain's poller alike.
 * - POLLER_INTERVAL_MS (default 1000): how often eth_blockNumber is polled for a new block.
 * - POLLER_START_BLOCK: the first block to read TransactionManager logs from when no cursor is stored yet
 *   (first start, or a new redisPrefix). Without it the poller starts at max(0, head − 100 000): set it to
 *   the block the router was registered at to see older transfers, or near the head to skip history.
 * - POLLER_MAX_RANGE_BLOCKS (default 2000): blocks per eth_getLogs, for RPCs with a smaller range cap.
 * - POLLER_LEASE_TTL_MS (default 3000): TTL of the chain's poller lease, renewed every quarter of it: how fast a
 *   standby (or the restarted process) takes over from an active poller that died (poller-lease.ts).
 */
export function readPollerEnv(env: NodeJS.ProcessEnv): PollerEnv {
  return {
    chainIds: readChainIdsEnv(env),
    options: {
      intervalMs: readOptionalIntegerEnv(env, "POLLER_INTERVAL_MS", 10),
      startBlock: readOptionalIntegerEnv(env, "POLLER_START_BLOCK", 0),
      maxRangeBlocks: readOptionalIntegerEnv(env, "POLLER_MAX_RANGE_BLOCKS", 1),
      leaseTtlMs: readOptionalIntegerEnv(env, "POLLER_LEASE_TTL_MS", 200),
    },
  };
}

/** The whole environment, and each CHAIN_ID entry against chainConfig: what main.ts checks before anything connects. */
export function checkPollerEnv(env: NodeJS.ProcessEnv, config: RouterConfig): void {
  readPollerEnv(env).chainIds.forEach((chainId) => chainConfigFor(config, chainId));
}

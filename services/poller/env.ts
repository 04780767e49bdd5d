import { PollerConfigError } from "./errors";
import type { PollerOptions } from "./start-poller";

export interface PollerEnv {
  readonly chainId: number;
  readonly options: PollerOptions;
}

/**
 * The process's own settings, from the environment (one config file serves every chain's process):
 * - CHAIN_ID (required): the chain this process polls; must be a key of chainConfig.
 * - POLLER_INTERVAL_MS (default 1000): how often eth_blockNumber is polled for a new block.
 * - POLLER_START_BLOCK: the first block to read TransactionManager logs from when no cursor is stored yet
 *   (first start, or a new redisPrefix). Without it the poller starts at max(0, head − 100 000): set it to
 *   the block the router was registered at to see older transfers, or near the head to skip history.
 * - POLLER_MAX_RANGE_BLOCKS (default 2000): blocks per eth_getLogs, for RPCs with a smaller range cap.
 */
export function readPollerEnv(env: NodeJS.ProcessEnv): PollerEnv {
  const raw = env.CHAIN_ID;
  if (raw === undefined || !/^[0-9]+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw new PollerConfigError(`CHAIN_ID must be set to a chain id of chainConfig (got ${JSON.stringify(raw ?? null)})`);
  }
  return {
    chainId: Number(raw),
    options: {
      intervalMs: optionalInteger(env, "POLLER_INTERVAL_MS", 10),
      startBlock: optionalInteger(env, "POLLER_START_BLOCK", 0),
      maxRangeBlocks: optionalInteger(env, "POLLER_MAX_RANGE_BLOCKS", 1),
    },
  };
}

function optionalInteger(env: NodeJS.ProcessEnv, name: string, minimum: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") {
    return undefined;
  }
  const value = Number(raw);
  if (!/^[0-9]+$/.test(raw) || value < minimum || !Number.isSafeInteger(value)) {
    throw new PollerConfigError(`${name} must be an integer >= ${minimum} (got ${JSON.stringify(raw)})`);
  }
  return value;
}

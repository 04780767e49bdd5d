import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { RouterConfig } from "../../shared/config/types";
import { readHeartbeats, type HeartbeatStatus } from "../../shared/metrics/heartbeat";
import {
  pendingTransactions,
  queueCounts,
  readChainState,
  type ChainState,
  type JobState,
  type PendingTx,
} from "../../shared/metrics/router-state";

export interface ChainStatus extends ChainState {
  /** head − the block up to which transfers are stored (subgraph or log cursor). */
  readonly syncLagBlocks?: number;
  readonly gasLow?: boolean;
  readonly queue: Record<JobState, number>;
  readonly pendingTransactions: readonly PendingTx[];
}

export interface RouterStatus {
  readonly atMs: number;
  readonly modes: {
    readonly network: string;
    readonly cleanUpMode: boolean;
    readonly diagnosticMode: boolean;
    readonly dashboardActions: boolean;
  };
  readonly processes: readonly HeartbeatStatus[];
  readonly chains: readonly ChainStatus[];
}

/**
 * GET /status: the whole router as Redis shows it. Which processes beat (alive/ready), each chain's head, how
 * far the transfer view lags, liquidity and what open bids reserve, gas against minGas, queue counts and the
 * pending transactions. Values are what the processes stored; nothing here calls a chain.
 */
export function createStatusReader(deps: {
  config: RouterConfig;
  redis: Redis;
  queueFor(chainId: number): Queue;
}): () => Promise<RouterStatus> {
  const { config, redis } = deps;
  return async () => {
    const nowMs = Date.now();
    const chains = await Promise.all(
      Object.values(config.chainConfig).map(async (chain): Promise<ChainStatus> => {
        const queue = deps.queueFor(chain.chainId);
        const [state, counts, pending] = await Promise.all([
          readChainState(redis, config, chain.chainId, nowMs),
          queueCounts(queue),
          pendingTransactions(redis, config.redisPrefix, queue, chain.chainId, nowMs),
        ]);
        return {
          ...state,
          syncLagBlocks:
            state.head !== undefined && state.syncedBlock !== undefined ? state.head - state.syncedBlock : undefined,
          gasLow: state.gasWei !== undefined ? BigInt(state.gasWei) < BigInt(state.minGasWei) : undefined,
          queue: counts,
          pendingTransactions: pending,
        };
      }),
    );
    return {
      atMs: nowMs,
      modes: {
        network: config.network,
        cleanUpMode: config.cleanUpMode,
        diagnosticMode: config.diagnosticMode,
        dashboardActions: config.dashboardActions,
      },
      processes: await readHeartbeats(redis, config.redisPrefix, nowMs),
      chains,
    };
  };
}

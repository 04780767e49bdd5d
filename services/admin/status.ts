import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { RouterConfig } from "../../shared/config/types";
import type { ReconciliationRow } from "../../shared/ledger/reconcile-reads";
import { readHeartbeats, type HeartbeatStatus } from "../../shared/metrics/heartbeat";
import { cleanUpModeKey, openTransfersKey } from "../../shared/coordination/keys";
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
  /** Transfer sides still Prepared on this chain in the transfer store (the router has work left on them). */
  readonly openTransfers: number;
  /** Broadcast and not yet confirmed, failed jobs' transactions included (they may still be mined). */
  readonly pendingTransactions: readonly PendingTx[];
}

/** Job states in which a job can still run and send: any job in one of them keeps the router from being drained. */
export const IN_FLIGHT_JOB_STATES = ["waiting", "active", "delayed", "prioritized", "waiting-children"] as const;

export interface RouterStatus {
  readonly atMs: number;
  readonly modes: {
    readonly network: string;
    /** The config's `cleanUpMode`, or the run-time switch `npm run drain` sets in Redis. */
    readonly cleanUpMode: boolean;
    /** When `npm run drain` switched clean-up mode on (absent when the switch is off). */
    readonly cleanUpModeSinceMs?: number;
    readonly diagnosticMode: boolean;
    readonly dashboardActions: boolean;
  };
  /**
   * Nothing left to finish on any configured chain: no open transfer, no transaction job in flight
   * (IN_FLIGHT_JOB_STATES) and no pending transaction. With clean-up mode on, a drained router can be stopped.
   */
  readonly drained: boolean;
  readonly processes: readonly HeartbeatStatus[];
  readonly chains: readonly ChainStatus[];
  /** The books against the chain (docs/accounting.md#reconciliation); absent when the books are off. */
  readonly ledger?: LedgerStatus;
}

/** Each chain's latest reconciliation; `drift` when any line of it is flagged; the error when unreadable. */
export type LedgerStatus =
  { readonly drift: boolean; readonly reconciliation: readonly ReconciliationRow[] } | { readonly unavailable: string };

/** The drain verdict of one chain (exported for `npm run drain`'s progress line and its tests). */
export function chainDrained(chain: Pick<ChainStatus, "openTransfers" | "queue" | "pendingTransactions">): boolean {
  return (
    chain.openTransfers === 0 &&
    chain.pendingTransactions.length === 0 &&
    IN_FLIGHT_JOB_STATES.every((state) => (chain.queue[state] ?? 0) === 0)
  );
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
  /** The latest reconciliation rows (shared/ledger/reconcile-reads.ts), when the config has a ledger. */
  readReconciliation?: () => Promise<readonly ReconciliationRow[]>;
}): () => Promise<RouterStatus> {
  const { config, redis } = deps;
  return async () => {
    const nowMs = Date.now();
    const chains = await Promise.all(
      Object.values(config.chainConfig).map(async (chain): Promise<ChainStatus> => {
        const queue = deps.queueFor(chain.chainId);
        const [state, counts, pending, openTransfers] = await Promise.all([
          readChainState(redis, config, chain.chainId, nowMs),
          queueCounts(queue),
          pendingTransactions(redis, config.redisPrefix, queue, chain.chainId, nowMs, true),
          redis.zcard(openTransfersKey(config.redisPrefix, chain.chainId)),
        ]);
        return {
          ...state,
          syncLagBlocks:
            state.head !== undefined && state.syncedBlock !== undefined ? state.head - state.syncedBlock : undefined,
          gasLow: state.gasWei !== undefined ? BigInt(state.gasWei) < BigInt(state.minGasWei) : undefined,
          queue: counts,
          openTransfers,
          pendingTransactions: pending,
        };
      }),
    );
    const cleanUpSwitch = await redis.get(cleanUpModeKey(config.redisPrefix));
    const cleanUpModeSinceMs = cleanUpSwitch === null ? undefined : sinceOf(cleanUpSwitch);
    return {
      atMs: nowMs,
      modes: {
        network: config.network,
        cleanUpMode: config.cleanUpMode || cleanUpSwitch !== null,
        cleanUpModeSinceMs,
        diagnosticMode: config.diagnosticMode,
        dashboardActions: config.dashboardActions,
      },
      drained: chains.every(chainDrained),
      processes: await readHeartbeats(redis, config.redisPrefix, nowMs),
      chains,
      ...(deps.readReconciliation ? { ledger: await ledgerStatus(deps.readReconciliation) } : {}),
    };
  };
}

/** A database the admin cannot read does not take /status down: the section says why instead. */
async function ledgerStatus(read: () => Promise<readonly ReconciliationRow[]>): Promise<LedgerStatus> {
  try {
    const reconciliation = await read();
    return { drift: reconciliation.some((r) => r.flagged), reconciliation };
  } catch {
    // Not the driver's message: the books' database is named by the operator's config, not by /status.
    return { unavailable: "the ledger database did not answer" };
  }
}

/** The switch's `sinceMs`; undefined when its value is not the JSON `npm run drain` writes (set by hand). */
function sinceOf(value: string): number | undefined {
  try {
    const since = (JSON.parse(value) as { sinceMs?: unknown }).sinceMs;
    return typeof since === "number" ? since : undefined;
  } catch {
    return undefined;
  }
}

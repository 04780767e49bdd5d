import type { SubmitterOptions } from "./start-submitter";
import { readChainIdEnv, readOptionalIntegerEnv } from "../../shared/process/process-env";

export interface SubmitterEnv {
  readonly chainId: number;
  readonly options: SubmitterOptions;
}

/**
 * The process's own settings, from the environment (one config file serves every chain's process):
 * - CHAIN_ID (required): the chain this process submits on; must be a key of chainConfig.
 * - SUBMITTER_CONCURRENCY, SUBMITTER_LEASE_TTL_MS, SUBMITTER_NONCE_GAP_BOUND_MS, SUBMITTER_LOCK_DURATION_MS, SUBMITTER_STALLED_INTERVAL_MS, SUBMITTER_POLL_INTERVAL_MS, SUBMITTER_MAX_STALLED_COUNT
 *   (optional tuning, see start-submitter.ts and docs/submitter.md): the lease TTL bounds takeover after a crash.
 */
export function readSubmitterEnv(env: NodeJS.ProcessEnv): SubmitterEnv {
  return {
    chainId: readChainIdEnv(env),
    options: {
      concurrency: readOptionalIntegerEnv(env, "SUBMITTER_CONCURRENCY", 1),
      nonceGapBoundMs: readOptionalIntegerEnv(env, "SUBMITTER_NONCE_GAP_BOUND_MS", 100),
      leaseTtlMs: readOptionalIntegerEnv(env, "SUBMITTER_LEASE_TTL_MS", 200),
      lockDurationMs: readOptionalIntegerEnv(env, "SUBMITTER_LOCK_DURATION_MS", 1000),
      stalledIntervalMs: readOptionalIntegerEnv(env, "SUBMITTER_STALLED_INTERVAL_MS", 500),
      pollIntervalMs: readOptionalIntegerEnv(env, "SUBMITTER_POLL_INTERVAL_MS", 10),
      maxStalledCount: readOptionalIntegerEnv(env, "SUBMITTER_MAX_STALLED_COUNT", 0),
    },
  };
}

import type { SubmitterOptions } from "./start-submitter";
import { readChainIdEnv, readOptionalIntegerEnv } from "../../shared/process/process-env";

export interface SubmitterEnv {
  readonly chainId: number;
  readonly options: SubmitterOptions;
}

/**
 * The process's own settings, from the environment (one config file serves every chain's process):
 * - CHAIN_ID (required): the chain this process submits on; must be a key of chainConfig.
 * - SUBMITTER_LOCK_DURATION_MS, SUBMITTER_STALLED_INTERVAL_MS, SUBMITTER_POLL_INTERVAL_MS (optional tuning,
 *   see start-submitter.ts): faster stand-by takeover after a crash costs more Redis traffic.
 */
export function readSubmitterEnv(env: NodeJS.ProcessEnv): SubmitterEnv {
  return {
    chainId: readChainIdEnv(env),
    options: {
      lockDurationMs: readOptionalIntegerEnv(env, "SUBMITTER_LOCK_DURATION_MS", 1000),
      stalledIntervalMs: readOptionalIntegerEnv(env, "SUBMITTER_STALLED_INTERVAL_MS", 500),
      pollIntervalMs: readOptionalIntegerEnv(env, "SUBMITTER_POLL_INTERVAL_MS", 10),
    },
  };
}

import type { SubmitterOptions } from "./start-submitter";
import { SubmitterConfigError } from "./send/errors";

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
  const raw = env.CHAIN_ID;
  if (raw === undefined || !/^[0-9]+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw new SubmitterConfigError(`CHAIN_ID must be set to a chain id of chainConfig (got ${JSON.stringify(raw ?? null)})`);
  }
  return {
    chainId: Number(raw),
    options: {
      lockDurationMs: optionalMs(env, "SUBMITTER_LOCK_DURATION_MS", 1000),
      stalledIntervalMs: optionalMs(env, "SUBMITTER_STALLED_INTERVAL_MS", 500),
      pollIntervalMs: optionalMs(env, "SUBMITTER_POLL_INTERVAL_MS", 10),
    },
  };
}

function optionalMs(env: NodeJS.ProcessEnv, name: string, minimum: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") {
    return undefined;
  }
  const value = Number(raw);
  if (!/^[0-9]+$/.test(raw) || value < minimum || !Number.isSafeInteger(value)) {
    throw new SubmitterConfigError(`${name} must be an integer number of milliseconds >= ${minimum} (got ${JSON.stringify(raw)})`);
  }
  return value;
}

import { RouterError, errorClass } from "../errors";
import type { ChainConfig, RouterConfig } from "../config/types";

/**
 * A per-chain process (submitter, poller) was started without a usable CHAIN_ID, or with a bad tuning
 * variable: it refuses to start. One config file serves every chain's process, so these come from the
 * process's environment (ecosystem.config.js sets them).
 */
export class ProcessEnvError extends errorClass(RouterError, "PROCESS_ENV_INVALID", "terminal") {}

/** CHAIN_ID: a positive decimal integer; whether it is configured is checked by `chainConfigFor`. */
export function readChainIdEnv(env: NodeJS.ProcessEnv): number {
  const raw = env.CHAIN_ID;
  if (raw === undefined || !/^[0-9]+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw new ProcessEnvError(`CHAIN_ID must be set to a chain id of chainConfig (got ${JSON.stringify(raw ?? null)})`);
  }
  return Number(raw);
}

/** An optional non-negative integer variable: absent or empty is undefined; present but invalid refuses to start. */
export function readOptionalIntegerEnv(env: NodeJS.ProcessEnv, name: string, minimum: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") {
    return undefined;
  }
  const value = Number(raw);
  if (!/^[0-9]+$/.test(raw) || value < minimum || !Number.isSafeInteger(value)) {
    throw new ProcessEnvError(`${name} must be an integer >= ${minimum} (got ${JSON.stringify(raw)})`);
  }
  return value;
}

/** The chain a per-chain process serves; a CHAIN_ID missing from chainConfig refuses to start. */
export function chainConfigFor(config: RouterConfig, chainId: number): ChainConfig {
  const chain = config.chainConfig[String(chainId)];
  if (!chain) {
    throw new ProcessEnvError(
      `CHAIN_ID ${chainId} is not a key of chainConfig (configured: ${Object.keys(config.chainConfig).join(", ")})`,
      { chainId },
    );
  }
  return chain;
}

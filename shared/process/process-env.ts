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
  if (raw === undefined || !isChainId(raw)) {
    throw new ProcessEnvError(`CHAIN_ID must be set to a chain id of chainConfig (got ${JSON.stringify(raw ?? null)})`);
  }
  return Number(raw);
}

/**
 * CHAIN_ID as a comma-separated list (a poller process may watch several chains): each entry a positive decimal
 * integer, none empty, none twice. One id is a list of one. Whether each is configured is `chainConfigFor`'s check.
 */
export function readChainIdsEnv(env: NodeJS.ProcessEnv): number[] {
  const raw = env.CHAIN_ID;
  if (raw === undefined || raw.trim() === "") {
    throw new ProcessEnvError(
      `CHAIN_ID must be set to a chain id of chainConfig, or a comma-separated list of them (got ${JSON.stringify(raw ?? null)})`,
    );
  }
  const entries = raw.split(",").map((entry) => entry.trim());
  const bad = entries.find((entry) => !isChainId(entry));
  if (bad !== undefined) {
    throw new ProcessEnvError(
      `CHAIN_ID: ${JSON.stringify(bad)} is not a chain id; each comma-separated entry must be a positive integer ` +
        `(got ${JSON.stringify(raw)})`,
    );
  }
  const ids = entries.map(Number);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice !== undefined) {
    throw new ProcessEnvError(`CHAIN_ID names chain ${twice} twice (got ${JSON.stringify(raw)})`);
  }
  return ids;
}

function isChainId(raw: string): boolean {
  return /^[0-9]+$/.test(raw) && Number(raw) >= 1 && Number.isSafeInteger(Number(raw));
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

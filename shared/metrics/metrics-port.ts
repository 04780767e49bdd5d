import type { RouterConfig } from "../config/types";

/** Ports reserved per (role, chain) slot: room for the 32 instances ecosystem.config.js allows. */
export const PORTS_PER_SLOT = 32;

/** The roles with a metrics port; per-chain roles take one slot per configured chain. */
export type ProcessRole = "admin" | "auction" | "submitter" | "poller" | "ledger";

/** The ledger's slot: past the last chain slot (chain slots are 0-63, roles 2-129), so adding a chain never moves it. */
export const LEDGER_METRICS_SLOT = 130;

/**
 * The port of a process's /metrics, /healthz and /readyz:
 *   metricsPort + slot * 32 + instance
 * slot 0 = admin, 1 = auction, then per chain with chain slot c: submitter 2 + 2c, poller 3 + 2c. A chain's slot
 * is its `metricsSlot` when the config pins one, else the lowest slot no chain pins, in chainConfig order (key
 * order: ascending chain ids). Unpinned, a chain added below others moves their ports; pinned, nothing moves.
 * The ledger (one process, no chain) takes slot 130, after every chain's.
 * `instance` is PM2's NODE_APP_INSTANCE (0 without PM2). So two processes of one router never collide, and
 * Prometheus can be given the whole list statically (scripts/ops-prometheus.ts prints it).
 */
export function metricsPortFor(
  config: RouterConfig,
  role: ProcessRole,
  chainId: number | undefined,
  instance: number,
): number {
  return config.metricsPort + metricsSlot(config, role, chainId) * PORTS_PER_SLOT + (instance % PORTS_PER_SLOT);
}

export function metricsSlot(config: RouterConfig, role: ProcessRole, chainId: number | undefined): number {
  if (role === "admin") {
    return 0;
  }
  if (role === "auction") {
    return 1;
  }
  if (role === "ledger") {
    return LEDGER_METRICS_SLOT;
  }
  const chainSlot = chainMetricsSlots(config).get(chainId ?? Number.NaN);
  if (chainSlot === undefined) {
    throw new RangeError(`${role}: chain ${String(chainId)} is not in chainConfig`);
  }
  return 2 + 2 * chainSlot + (role === "poller" ? 1 : 0);
}

/** chain id → chain slot: pinned ones as pinned, the others the lowest free slots in chainConfig order. */
export function chainMetricsSlots(config: Pick<RouterConfig, "chainConfig">): Map<number, number> {
  const chains = Object.values(config.chainConfig);
  const pinned = new Set(chains.flatMap((chain) => (chain.metricsSlot === undefined ? [] : [chain.metricsSlot])));
  const slots = new Map<number, number>();
  let next = 0;
  for (const chain of chains) {
    if (chain.metricsSlot !== undefined) {
      slots.set(chain.chainId, chain.metricsSlot);
      continue;
    }
    while (pinned.has(next)) {
      next += 1;
    }
    slots.set(chain.chainId, next);
    next += 1;
  }
  return slots;
}

/** PM2's instance number of this process (NODE_APP_INSTANCE), 0 when not run by PM2. */
export function processInstance(env: NodeJS.ProcessEnv): number {
  const raw = env.NODE_APP_INSTANCE;
  return raw !== undefined && /^[0-9]+$/.test(raw) ? Number(raw) : 0;
}

export function isProcessRole(service: string): service is ProcessRole {
  return (
    service === "admin" ||
    service === "auction" ||
    service === "submitter" ||
    service === "poller" ||
    service === "ledger"
  );
}

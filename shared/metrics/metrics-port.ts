import type { RouterConfig } from "../config/types";

/** Ports reserved per (role, chain) slot: room for the 32 instances ecosystem.config.js allows. */
export const PORTS_PER_SLOT = 32;

/** The roles with a metrics port; per-chain roles take one slot per configured chain. */
export type ProcessRole = "admin" | "auction" | "submitter" | "poller";

/**
 * The port of a process's /metrics, /healthz and /readyz:
 *   metricsPort + slot * 32 + instance
 * slot 0 = admin, 1 = auction, then per chain at index i of chainConfig (in key order, the same file for every
 * process): submitter 2 + 2i, poller 3 + 2i. `instance` is PM2's NODE_APP_INSTANCE (0 without PM2). So two
 * processes of one router never collide, and Prometheus can be given the whole list statically.
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
  const index = Object.values(config.chainConfig).findIndex((chain) => chain.chainId === chainId);
  if (index < 0) {
    throw new RangeError(`${role}: chain ${String(chainId)} is not in chainConfig`);
  }
  return 2 + 2 * index + (role === "poller" ? 1 : 0);
}

/** PM2's instance number of this process (NODE_APP_INSTANCE), 0 when not run by PM2. */
export function processInstance(env: NodeJS.ProcessEnv): number {
  const raw = env.NODE_APP_INSTANCE;
  return raw !== undefined && /^[0-9]+$/.test(raw) ? Number(raw) : 0;
}

export function isProcessRole(service: string): service is ProcessRole {
  return service === "admin" || service === "auction" || service === "submitter" || service === "poller";
}

import { Registry, collectDefaultMetrics } from "prom-client";
import { defineRouterMetrics, type RouterMetrics } from "./metric-definitions";

/**
 * The process's one registry and its metrics (every metric is defined in metric-definitions.ts). PM2 runs each
 * process on its own port (shared/metrics/metrics-port.ts) because prom-client's cluster aggregation cannot work
 * under PM2.
 */

export interface ProcessLabels {
  readonly role: string;
  readonly chain?: number;
  readonly instance: number;
}

let processRegistry: Registry | undefined;
let processMetrics: RouterMetrics | undefined;

/**
 * The process's registry and metrics, created on first use. Hook sites call `routerMetrics()` and only
 * `inc()`/`observe()`: a counter increment is a map lookup, far below the auction's per-bid CPU budget.
 */
export function routerMetrics(): RouterMetrics {
  if (!processMetrics) {
    processMetrics = defineRouterMetrics(metricsRegistry());
  }
  return processMetrics;
}

export function metricsRegistry(): Registry {
  processRegistry ??= new Registry();
  return processRegistry;
}

let defaultsCollected = false;

/** Default Node/process metrics, and `role` and `pm2_instance` labels on every series (`chain` labels stay per metric). */
export function labelProcessMetrics(labels: ProcessLabels): void {
  const registry = metricsRegistry();
  // `pm2_instance`, not `instance`: Prometheus sets `instance` to the scrape target itself.
  const defaults: Record<string, string> = { role: labels.role, pm2_instance: String(labels.instance) };
  registry.setDefaultLabels(defaults);
  if (!defaultsCollected) {
    defaultsCollected = true;
    // Standard names (process_*, nodejs_*), unprefixed, so off-the-shelf Node.js dashboards work; the `role` label
    // tells the router's series from other exporters'.
    collectDefaultMetrics({ register: registry });
  }
  routerMetrics();
}

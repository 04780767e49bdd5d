import type { RouterConfig } from "../../shared/config/types";
import type { ChainLeaseReport, LeaseReport } from "../../shared/metrics/heartbeat";
import { observeChainState, observeProviders } from "../../shared/process/observe-chain";
import type { Observability } from "../../shared/metrics/process-observability";
import type { RunningPoller } from "./start-poller";

/**
 * What a poller process exports besides its own health, per chain it polls: its lease role (a standby is ready,
 * alive and waiting; /readyz and /status show which role it has), the chain's Redis-held state (liquidity, gas,
 * heads, queue, pending transactions) and its provider's health. One /metrics per process: the metrics are the
 * process's one registry's (shared/metrics/router-metrics.ts), made once, and every chain's series carry their
 * `chain` label, so a second chain adds series, never a second metric. Readiness keeps one check per name, so with
 * several chains each check is named by its chain (`poller-lease:1338`); one chain keeps the plain names.
 */
export function observePollers(
  observe: Observability,
  config: RouterConfig,
  pollers: readonly RunningPoller[],
): { close(): Promise<void> } {
  const named = (name: string, chainId: number): string => (pollers.length === 1 ? name : `${name}:${chainId}`);
  observe.reportLease(() => leaseReportOf(pollers));
  const closers = pollers.map((poller) => {
    observe.readiness.add(named("poller-lease", poller.chainId), () => {
      const { role, term } = chainLease(poller);
      return { ok: true, detail: term === undefined ? role : `${role} (term ${term})` };
    });
    if (poller.provider) {
      observeProviders(observe, poller.chainId, poller.provider, named("providers", poller.chainId));
    }
    return observeChainState(observe, config, poller.chainId);
  });
  return {
    close: async () => {
      await Promise.all(closers.map((c) => c.close()));
    },
  };
}

function chainLease(poller: RunningPoller): ChainLeaseReport {
  return { chainId: poller.chainId, role: poller.role(), term: poller.leaseTerm() };
}

/** One chain: its role and term, as always. Several: "active" only when every lease is held here, and each chain's. */
function leaseReportOf(pollers: readonly RunningPoller[]): LeaseReport {
  const chains = pollers.map(chainLease);
  if (chains.length === 1) {
    return { role: chains[0].role, term: chains[0].term };
  }
  const roles = new Set(chains.map((c) => c.role));
  return { role: roles.size === 1 ? chains[0].role : "mixed", chains };
}

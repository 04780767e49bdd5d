import type { RouterConfig } from "../../shared/config/types";
import { observeChainState, observeProviders } from "../../shared/process/observe-chain";
import type { Observability } from "../../shared/metrics/process-observability";
import type { RunningPoller } from "./start-poller";

/**
 * What a poller process exports besides its own health: its lease role (a standby is ready, alive and waiting;
 * /readyz and /status show which role it has), the chain's Redis-held state (liquidity, gas, heads, queue,
 * pending transactions) and its provider's health.
 */
export function observePoller(
  observe: Observability,
  config: RouterConfig,
  chainId: number,
  poller: RunningPoller,
): { close(): Promise<void> } {
  const leaseReport = () => ({ role: poller.role(), term: poller.leaseTerm() });
  observe.reportLease(leaseReport);
  observe.readiness.add("poller-lease", () => {
    const { role, term } = leaseReport();
    return { ok: true, detail: term === undefined ? role : `${role} (term ${term})` };
  });
  const chainState = observeChainState(observe, config, chainId);
  if (poller.provider) {
    observeProviders(observe, chainId, poller.provider);
  }
  return chainState;
}

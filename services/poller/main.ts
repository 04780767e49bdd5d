import { observeChainState, observeProviders } from "../../shared/metrics/observe-chain";
import { runService } from "../../shared/process/run-service";
import { readPollerEnv } from "./env";
import { startPoller } from "./start-poller";

/** One process per chain (env CHAIN_ID); see start-poller.ts for what runs and env.ts for the settings. */
void runService({
  service: "poller",
  start: async ({ config, logger, env, observe }) => {
    const { chainId, options } = readPollerEnv(env);
    const poller = await startPoller({ config, logger, chainId, options });
    if (!observe) {
      return poller;
    }
    // A standby is ready (alive, waiting for the lease); /readyz and /status show which role it has.
    const leaseReport = () => ({ role: poller.role(), term: poller.leaseTerm() });
    observe.reportLease(leaseReport);
    observe.readiness.add("poller-lease", () => {
      const { role, term } = leaseReport();
      return { ok: true, detail: term === undefined ? role : `${role} (term ${term})` };
    });
    // The chain's poller exports the chain's Redis-held state (liquidity, gas, heads, queue, pending txs).
    const chainState = observeChainState(observe, config, chainId);
    if (poller.provider) {
      observeProviders(observe, chainId, poller.provider);
    }
    return {
      stop: async () => {
        await poller.stop();
        await chainState.close();
      },
    };
  },
});

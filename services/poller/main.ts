import { runService } from "../../shared/process/run-service";
import { readPollerEnv } from "./env";
import { observePoller } from "./observe-poller";
import { startPoller } from "./start-poller";

/** One process per chain (env CHAIN_ID); see start-poller.ts for what runs and env.ts for the settings. */
void runService({
  service: "poller",
  start: async ({ config, logger, env, observe }) => {
    const { chainId, options } = readPollerEnv(env);
    const poller = await startPoller({ config, logger, chainId, options });
    const observed = observe ? observePoller(observe, config, chainId, poller) : undefined;
    return {
      stop: async () => {
        await poller.stop();
        await observed?.close();
      },
    };
  },
});

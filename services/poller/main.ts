import { runService } from "../../shared/process/run-service";
import { checkPollerEnv, readPollerEnv } from "./env";
import { observePollers } from "./observe-poller";
import { startPollers } from "./start-pollers";

/**
 * One process per chain or for several (env CHAIN_ID, e.g. `1337,1338`): one independent poller per chain, see
 * start-pollers.ts for what runs and env.ts for the settings.
 */
void runService({
  service: "poller",
  checkEnv: checkPollerEnv,
  start: async ({ config, logger, env, observe }) => {
    const { chainIds, options } = readPollerEnv(env);
    const running = await startPollers({ config, logger, chainIds, options });
    const observed = observe ? observePollers(observe, config, running.pollers) : undefined;
    return {
      stop: async () => {
        await running.stop();
        await observed?.close();
      },
    };
  },
});

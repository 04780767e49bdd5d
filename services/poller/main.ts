import { runService } from "../../shared/process/run-service";
import { readPollerEnv } from "./env";
import { startPoller } from "./start-poller";

/** One process per chain (env CHAIN_ID); see start-poller.ts for what runs and env.ts for the settings. */
void runService({
  service: "poller",
  start: async ({ config, logger, env }) => {
    const { chainId, options } = readPollerEnv(env);
    return startPoller({ config, logger, chainId, options });
  },
});

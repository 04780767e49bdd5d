import { runService } from "../../shared/process/run-service";
import { readSubmitterEnv } from "./env";
import { startSubmitter } from "./start-submitter";

/** One process per chain (env CHAIN_ID); see start-submitter.ts for what runs. */
void runService({
  service: "submitter",
  start: async ({ config, logger, env }) => {
    const { chainId, options } = readSubmitterEnv(env);
    return startSubmitter({ config, logger, chainId, options });
  },
});

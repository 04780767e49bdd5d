import { observeProviders, observeTxWorker } from "../../shared/process/observe-chain";
import { runService } from "../../shared/process/run-service";
import { readSubmitterEnv } from "./env";
import { startSubmitter } from "./start-submitter";

/** One process per chain (env CHAIN_ID); see start-submitter.ts for what runs. */
void runService({
  service: "submitter",
  start: async ({ config, logger, env, observe }) => {
    const { chainId, options } = readSubmitterEnv(env);
    // A stuck term cannot be repaired in place: crash (runService logs it, flushes and exits 1) so PM2 restarts
    // the process; every job, record and nonce is in Redis, so the restart resumes them.
    const crash = (err: unknown): void => {
      setImmediate(() => {
        throw err;
      });
    };
    const submitter = await startSubmitter({ config, logger, chainId, options: { ...options, onStuck: crash } });
    if (observe) {
      observeProviders(observe, chainId, submitter.provider);
      observeTxWorker({ chainId, worker: submitter.worker, logger });
    }
    return submitter;
  },
});

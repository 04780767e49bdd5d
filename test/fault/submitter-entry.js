"use strict";
/**
 * Test-only submitter process: the production start (dist/, built by `npm run build`) plus a crash hook.
 * FAULT_CRASH_AT names a pipeline point (services/submitter/send/send-context.ts SendHookPoint); the first time
 * a job reaches it (after FAULT_CRASH_SKIP passes) the process SIGKILLs itself, as a power cut would. Plain JS so the fault tests can spawn it
 * with node alone; the hook lives here, never in production code.
 */
const { runService } = require("../../dist/shared/process/run-service");
const { readSubmitterEnv } = require("../../dist/services/submitter/env");
const { startSubmitter } = require("../../dist/services/submitter/start-submitter");
const { ledgerWithDefaults } = require("../../dist/shared/config");

const crashAt = process.env.FAULT_CRASH_AT;
// FAULT_CRASH_SKIP: pass the point this many times first (a crash in the middle of many jobs in flight).
let skip = Number(process.env.FAULT_CRASH_SKIP ?? "0");
const hooks = {
  at(point, detail) {
    if (point === crashAt && skip-- <= 0) {
      process.stdout.write(`${JSON.stringify({ message: "fault hook: SIGKILL", point, ...detail })}\n`, () =>
        process.kill(process.pid, "SIGKILL"),
      );
      // Nothing after this point may run: wait for the signal.
      return new Promise(() => undefined);
    }
    return undefined;
  },
};

// FAULT_LEDGER=on: a `ledger` section (the naming on), with no ledger process draining the queue.
const withLedger = (config) =>
  process.env.FAULT_LEDGER === "on"
    ? { ...config, ledger: ledgerWithDefaults({ databaseUrl: "postgres://fault.invalid/ledger" }) }
    : config;

void runService({
  service: "submitter",
  start: async ({ config, logger, env }) => {
    const { chainId, options } = readSubmitterEnv(env);
    return startSubmitter({ config: withLedger(config), logger, chainId, options: { ...options, hooks } });
  },
});

import { ConfigError, configSecrets, readConfig, redactConfig } from "../config";
import type { LoadedConfig, RouterConfig } from "../config/types";
import { errorMessage } from "../errors";
import { createLogger, type Logger } from "../logging/create-logger";
import { isProcessRole, processInstance } from "../metrics/metrics-port";
import { startObservability, type Observability, type RunningObservability } from "../metrics/process-observability";
import { readChainIdEnv, readChainIdsEnv } from "./process-env";
import { withTimeout } from "../timing";

/**
 * Stays below the PM2 `kill_timeout` (10000 ms in ecosystem.config.js): a process that is still draining
 * when PM2 sends SIGKILL loses its final log lines and exits with no outcome recorded.
 */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 8000;

/** A stuck stdout must not keep a dying process alive; losing the last lines is the lesser evil. */
const FLUSH_TIMEOUT_MS = 2000;

export interface ServiceContext {
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly env: NodeJS.ProcessEnv;
  /** Readiness checks and scrape-time gauges the service adds (shared/metrics); absent for unknown roles. */
  readonly observe?: Observability;
}

export interface RunningService {
  stop(): Promise<void>;
}

export interface RunServiceParams {
  /** Process name: prefixes config problems on stderr and lands in every log line. */
  readonly service: string;
  start(ctx: ServiceContext): Promise<RunningService>;
  /**
   * The process's own environment (CHAIN_ID, tuning), checked against the config before anything connects (no
   * metrics port, no heartbeat): a bad value throws, naming its key, and the process exits 1.
   */
  checkEnv?(env: NodeJS.ProcessEnv, config: RouterConfig): void;
  readonly shutdownTimeoutMs?: number;
}

/**
 * The one way a router process starts and stops, so every `services/<name>/main.ts` is pure wiring:
 * config (refused before anything connects) → logger → start() → "ready" to PM2 → signal-driven shutdown.
 * Resolves once the service has started (or once the process is on its way out); never rejects.
 */
export async function runService(params: RunServiceParams): Promise<void> {
  const loaded = loadConfigOrExit(params.service);
  if (!loaded) {
    return;
  }
  const { config, warnings } = loaded;
  const logger = createLogger({
    level: config.logLevel,
    service: params.service,
    secrets: configSecrets(config),
  });
  for (const warning of warnings) {
    logger.warn(`config: ${warning}`, { at: "service.config" });
  }
  if (config.ledger === undefined) {
    logger.warn(
      "ledger: the config has no `ledger` section: the books are off, nothing is booked (docs/accounting.md)",
      {
        at: "service.config",
      },
    );
  }
  logger.debug("effective config", { at: "service.config", config: redactConfig(config) });

  const lifecycle = createLifecycle(logger, params.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS);
  try {
    params.checkEnv?.(process.env, config);
  } catch (err) {
    await lifecycle.fail("invalid process environment; not starting", err);
    return;
  }
  installProcessHandlers(lifecycle);

  // /metrics /healthz /readyz and the heartbeat come up before start(), so a slow start is visible.
  let observe: RunningObservability | undefined;
  if (isProcessRole(params.service)) {
    const chainIds =
      params.service === "submitter" || params.service === "poller"
        ? chainIdsOrUndefined(params.service, process.env)
        : undefined;
    observe = await startObservability({
      config,
      logger,
      role: params.service,
      chainIds,
      instance: processInstance(process.env),
    });
  }
  const starting = params.start({ config, logger, env: process.env, observe }).then((running) => ({
    stop: async () => {
      try {
        await running.stop();
      } finally {
        await observe?.stop();
      }
    },
  }));
  lifecycle.track(starting);
  try {
    await starting;
  } catch (err) {
    await observe?.stop();
    await lifecycle.fail("start failed", err);
    return;
  }
  logger.info("service started", { at: "service.start" });
  if (!observe) {
    process.send?.("ready");
    return;
  }
  observe.started();
  // PM2's wait_ready: "ready" once /readyz first passes (PM2's listen_timeout bounds the wait).
  void observe.firstReady().then(() => {
    logger.info("service ready", { at: "service.ready" });
    process.send?.("ready");
  });
}

/**
 * The process's CHAIN_ID (a poller's may list several) for its metrics port and process id; a bad one is refused
 * by the service's own checks (checkEnv, start()).
 */
function chainIdsOrUndefined(service: "submitter" | "poller", env: NodeJS.ProcessEnv): number[] | undefined {
  try {
    return service === "poller" ? readChainIdsEnv(env) : [readChainIdEnv(env)];
  } catch {
    return undefined;
  }
}

/** Prints each problem on its own line and exits 1; values are never printed, only key paths and reasons. */
function loadConfigOrExit(service: string): LoadedConfig | undefined {
  try {
    return readConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${service}: invalid router config (${err.problems.length} problem(s)); not starting\n`);
      // A warning can explain a problem: a key the file spells the original router's way is named by ours.
      for (const warning of err.warnings) {
        process.stderr.write(`${service}: warning: ${warning}\n`);
      }
      for (const problem of err.problems) {
        process.stderr.write(`${service}: ${problem}\n`);
      }
    } else {
      process.stderr.write(`${service}: the router config could not be loaded: ${errorMessage(err)}\n`);
    }
    process.exit(1);
    return undefined;
  }
}

interface Lifecycle {
  track(starting: Promise<RunningService>): void;
  shutdown(signal: NodeJS.Signals): Promise<void>;
  fail(reason: string, err: unknown): Promise<void>;
}

function createLifecycle(logger: Logger, shutdownTimeoutMs: number): Lifecycle {
  let starting: Promise<RunningService> | undefined;
  let shuttingDown = false;
  let exiting = false;

  const exit = async (code: number): Promise<void> => {
    if (exiting) {
      return;
    }
    exiting = true;
    await withTimeout(logger.flush(), FLUSH_TIMEOUT_MS).catch(() => undefined);
    process.exit(code);
  };

  return {
    track: (promise) => {
      starting = promise;
    },
    shutdown: async (signal) => {
      if (shuttingDown) {
        logger.info("shutdown already in progress", { at: "service.shutdown", signal });
        return;
      }
      shuttingDown = true;
      logger.info("shutting down", { at: "service.shutdown", signal, timeoutMs: shutdownTimeoutMs });
      const startedAtMs = Date.now();
      try {
        // A signal during start() waits for it: stopping half-built resources is what leaks connections.
        await withTimeout(stopAfterStart(starting), shutdownTimeoutMs);
      } catch (err) {
        logger.error("shutdown did not complete cleanly", { at: "service.shutdown", error: err });
        await exit(1);
        return;
      }
      logger.info("stopped", { at: "service.shutdown", durationMs: Date.now() - startedAtMs });
      await exit(0);
    },
    fail: async (reason, err) => {
      logger.fatal(reason, { at: "service.fatal", error: err });
      await exit(1);
    },
  };
}

async function stopAfterStart(starting: Promise<RunningService> | undefined): Promise<void> {
  if (!starting) {
    return;
  }
  const running = await starting;
  await running.stop();
}

function installProcessHandlers(lifecycle: Lifecycle): void {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => void lifecycle.shutdown(signal));
  }
  process.on("uncaughtException", (err) => void lifecycle.fail("uncaught exception", err));
  process.on("unhandledRejection", (reason) => void lifecycle.fail("unhandled rejection", reason));
}

import { spawn, type ChildProcess } from "node:child_process";
import { Socket } from "node:net";
import { join, resolve } from "node:path";
import { findBinary, isExecutable, type FindBinaryOptions } from "../../scripts/local/binaries";
import { tcpExchange } from "../../scripts/local/probes";
import { getFreePort } from "./free-port";
import { settlesWithin, sleep } from "../../shared/timing";

// Moved to scripts/local (npm run local uses them too); re-exported for the tests' imports.
export { findBinary, tcpExchange, type FindBinaryOptions };

/** Enough of a server's log to explain why it did not start, small enough for an error message. */
const OUTPUT_TAIL_CHARS = 4096;
const DEFAULT_READY_TIMEOUT_MS = 10_000;
const READY_POLL_INTERVAL_MS = 20;
const PROBE_ATTEMPT_TIMEOUT_MS = 1_000;
const STOP_GRACE_MS = 3_000;
const STOP_KILL_WAIT_MS = 2_000;

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  /** Last ~4 KB of stdout and stderr, interleaved. */
  outputTail(): string;
  /** null while the process runs. */
  exitStatus(): ExitStatus | null;
  /** SIGTERM, then SIGKILL after a bound; idempotent. */
  stop(): Promise<void>;
}

/** A service that exited or never answered its readiness probe; carries the process output for diagnosis. */
export class ServiceStartError extends Error {
  readonly service: string;
  readonly exit: ExitStatus | null;
  readonly output: string;

  constructor(service: string, reason: string, exit: ExitStatus | null, output: string) {
    super(`${service} failed to start: ${reason}\n--- last output of ${service} ---\n${output || "(no output)"}`);
    this.name = new.target.name;
    this.service = service;
    this.exit = exit;
    this.output = output;
  }
}

// ---- registry of live children: killed synchronously when the (jest worker) process goes away ----------

/**
 * Jest runs each test file in a vm context whose `process` is a copy with its own listener table, so an
 * "exit" hook registered there never fires. Functions of core modules come from the host realm, and their
 * Function constructor evaluates in the host's global scope, which yields the real process object.
 */
function hostProcess(): NodeJS.Process {
  const HostFunction = spawn.constructor as FunctionConstructor;
  return new HostFunction("return process")() as NodeJS.Process;
}

/** Kept on the host process under a global symbol: one Set and one set of hooks per OS process. */
const REGISTRY_KEY = Symbol.for("nxtp-router.test-harness.children");

function liveChildren(): Set<ChildProcess> {
  const host = hostProcess();
  const holder = host as unknown as Record<symbol, Set<ChildProcess> | undefined>;
  const existing = holder[REGISTRY_KEY];
  if (existing) {
    return existing;
  }
  const created = new Set<ChildProcess>();
  holder[REGISTRY_KEY] = created;
  const killAll = (): void => {
    for (const child of created) {
      child.kill("SIGKILL");
    }
  };
  host.on("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    // Node's default signal action skips "exit" handlers; kill children, then re-raise if we were alone.
    const onSignal = (): void => {
      killAll();
      if (host.listenerCount(signal) === 1) {
        host.removeListener(signal, onSignal);
        host.kill(host.pid, signal);
      }
    };
    host.on(signal, onSignal);
  }
  return created;
}

/** Pids of harness children that have not exited yet (for leak assertions in tests). */
export function liveChildPids(): number[] {
  return [...liveChildren()].map((child) => child.pid ?? -1);
}

/** True while a process with this pid exists (signal 0 checks without signalling). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---- spawning ------------------------------------------------------------------------------------------

export interface SpawnManagedOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * Where util-linux `setpriv` exists, the kernel also SIGKILLs the child when its parent dies, which covers a
 * jest worker that is itself SIGKILLed (no hook runs then). setpriv execs, so the pid stays the server's.
 */
function withParentDeathSignal(command: string, args: readonly string[]): { command: string; args: string[] } {
  const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find(isExecutable);
  return setpriv
    ? { command: setpriv, args: ["--pdeathsig", "SIGKILL", "--", command, ...args] }
    : { command, args: [...args] };
}

export function spawnManaged(opts: SpawnManagedOptions): ManagedProcess {
  const launch = withParentDeathSignal(opts.command, opts.args);
  const child = spawn(launch.command, launch.args, { stdio: ["ignore", "pipe", "pipe"], env: process.env });
  const registry = liveChildren();
  registry.add(child);

  let tail = "";
  const append = (chunk: Buffer | string): void => {
    tail = (tail + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  // A forgotten stop() must not keep jest alive: unref so the worker can exit and the exit hook kills it.
  child.unref();
  for (const stream of [child.stdout, child.stderr]) {
    if (stream instanceof Socket) {
      stream.unref();
    }
  }

  let status: ExitStatus | null = null;
  const exited = new Promise<ExitStatus>((resolve) => {
    // "close" (not "exit"): it fires after stdout/stderr are drained, so the tail holds the last words.
    child.once("close", (code, signal) => {
      status = { code, signal };
      registry.delete(child);
      resolve(status);
    });
    // Spawn failures (ENOENT, EACCES) emit "error" and no "exit".
    child.once("error", (err) => {
      append(`\n[spawn error] ${err.message}\n`);
      if (child.pid === undefined) {
        status = { code: null, signal: null };
        registry.delete(child);
        resolve(status);
      }
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async (): Promise<void> => {
      if (status) {
        return;
      }
      child.kill("SIGTERM");
      if (await settlesWithin(exited, STOP_GRACE_MS)) {
        return;
      }
      child.kill("SIGKILL");
      if (!(await settlesWithin(exited, STOP_KILL_WAIT_MS))) {
        throw new Error(`${opts.name} (pid ${child.pid}) survived SIGKILL for ${STOP_KILL_WAIT_MS} ms`);
      }
    })();
    return stopping;
  };

  return {
    name: opts.name,
    pid: child.pid ?? -1,
    outputTail: () => tail,
    exitStatus: () => status,
    stop,
  };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The router's built processes (`npx tsc -p tsconfig.build.json`). */
export const ROUTER_DIST = resolve(__dirname, "../../dist/services");

/**
 * A router process, dist/services/<main> (e.g. "poller/main.js"), over `configFile`, with `env` as NAME=value
 * pairs. It runs through `env`, which drops the shell's secret overrides (ROUTER_ADMIN_TOKEN, ROUTER_MNEMONIC,
 * REDIS_URL) so the config file alone decides, and execs node, so the pid is node's.
 */
export function spawnRouterProcess(p: {
  name: string;
  main: string;
  configFile: string;
  env?: readonly string[];
}): ManagedProcess {
  return spawnManaged({
    name: p.name,
    command: "/usr/bin/env",
    args: [
      ...["ROUTER_ADMIN_TOKEN", "ROUTER_MNEMONIC", "REDIS_URL"].flatMap((secret) => ["-u", secret]),
      `ROUTER_CONFIG_FILE=${p.configFile}`,
      ...(p.env ?? []),
      process.execPath,
      join(ROUTER_DIST, p.main),
    ],
  });
}

/**
 * Polls `probe` until it returns true. Fails fast if the process exits, and after `timeoutMs` otherwise;
 * either way the error carries the process output.
 */
export async function waitForReady(
  proc: ManagedProcess,
  probe: (attemptTimeoutMs: number) => Promise<boolean>,
  timeoutMs: number = DEFAULT_READY_TIMEOUT_MS,
): Promise<void> {
  const startedAtMs = Date.now();
  let lastProblem = "no probe answered yet";
  for (;;) {
    const exit = proc.exitStatus();
    if (exit) {
      const how = exit.signal ? `signal ${exit.signal}` : `code ${String(exit.code)}`;
      throw new ServiceStartError(proc.name, `exited with ${how} before it was ready`, exit, proc.outputTail());
    }
    const remainingMs = startedAtMs + timeoutMs - Date.now();
    if (remainingMs <= 0) {
      const reason = `not ready after ${timeoutMs} ms (${lastProblem})`;
      throw new ServiceStartError(proc.name, reason, null, proc.outputTail());
    }
    try {
      if (await probe(Math.min(PROBE_ATTEMPT_TIMEOUT_MS, remainingMs))) {
        return;
      }
      lastProblem = "probe answered not ready";
    } catch (err) {
      lastProblem = messageOf(err);
    }
    await sleep(READY_POLL_INTERVAL_MS);
  }
}

export interface StartOnFreePortOptions {
  readonly name: string;
  readonly command: string;
  readonly args: (port: number) => readonly string[];
  readonly probe: (port: number, attemptTimeoutMs: number) => Promise<boolean>;
  readonly timeoutMs?: number;
}

const START_ATTEMPTS = 3;

/** Spawns on a fresh free port and waits until ready; retries only when the port was grabbed meanwhile. */
export async function startOnFreePort(opts: StartOnFreePortOptions): Promise<{ proc: ManagedProcess; port: number }> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await getFreePort();
    const proc = spawnManaged({ name: `${opts.name}:${port}`, command: opts.command, args: opts.args(port) });
    try {
      await waitForReady(proc, (attemptTimeoutMs) => opts.probe(port, attemptTimeoutMs), opts.timeoutMs);
      return { proc, port };
    } catch (err) {
      await proc.stop().catch(() => undefined); // keep the start error, which carries the output
      const portTaken = err instanceof ServiceStartError && err.exit !== null && /in use/i.test(err.output);
      if (!portTaken || attempt >= START_ATTEMPTS) {
        throw err;
      }
    }
  }
}

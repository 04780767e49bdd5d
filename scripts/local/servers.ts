import { join } from "node:path";
import { anvilBinary, ensureDebianBinary } from "./binaries";
import { spawnDetached, stopPid, tailFile, waitReady } from "./detached";
import { LocalServiceError } from "./errors";
import { getFreePort } from "./free-port";
import type { LocalPaths } from "./paths";
import { anvilAnswers, anvilArgs, httpAnswers, natsAnswers, natsArgs, redisAnswers, redisArgs } from "./probes";
import type { LocalProcess } from "./state";

/**
 * The servers of the local stack, each a detached process on a free loopback port with its output in
 * .local/logs/<name>.log. `record` is called as soon as a pid exists, before readiness, so a failed start
 * still leaves the pid in the state file for the clean-up.
 */
export interface ServerSpec {
  readonly name: string;
  readonly command: string;
  readonly args: (port: number) => readonly string[];
  readonly env?: (port: number) => NodeJS.ProcessEnv;
  readonly probe: (port: number, attemptTimeoutMs: number) => Promise<boolean>;
  readonly readyTimeoutMs?: number;
}

const START_ATTEMPTS = 3;
const DEFAULT_READY_TIMEOUT_MS = 30_000;

export async function startServer(
  paths: LocalPaths,
  spec: ServerSpec,
  record: (proc: LocalProcess) => void,
  forget: (pid: number) => void,
): Promise<LocalProcess> {
  const logFile = join(paths.logDir, `${spec.name}.log`);
  for (let attempt = 1; ; attempt += 1) {
    const port = await getFreePort();
    const started = spawnDetached({
      command: spec.command,
      args: spec.args(port),
      logFile,
      env: spec.env?.(port),
      cwd: paths.root,
    });
    const proc: LocalProcess = {
      name: spec.name,
      pid: started.pid,
      startTicks: started.startTicks,
      command: spec.command,
      logFile,
      port,
    };
    record(proc);
    try {
      await waitReady({
        name: spec.name,
        pid: started.pid,
        logFile,
        probe: (timeoutMs) => spec.probe(port, timeoutMs),
        timeoutMs: spec.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
      });
      return proc;
    } catch (err) {
      await stopPid(started.pid, 2_000).catch(() => undefined);
      forget(started.pid);
      // The free port can be taken between our probe and the server's bind: only that is worth a retry.
      const portTaken = err instanceof LocalServiceError && /in use/i.test(tailFile(logFile, 20));
      if (!portTaken || attempt >= START_ATTEMPTS) {
        throw err;
      }
    }
  }
}

export function anvilSpec(chainId: number): ServerSpec {
  return {
    name: `anvil-${chainId}`,
    command: anvilBinary(),
    args: (port) => anvilArgs(port, chainId),
    probe: (port, timeoutMs) => anvilAnswers(port, chainId, timeoutMs),
  };
}

export function redisSpec(log: (line: string) => void): ServerSpec {
  return {
    name: "redis-server",
    command: ensureDebianBinary("redis-server", log),
    args: redisArgs,
    probe: redisAnswers,
  };
}

export function natsSpec(log: (line: string) => void): ServerSpec {
  return { name: "nats-server", command: ensureDebianBinary("nats-server", log), args: natsArgs, probe: natsAnswers };
}

/** services/messaging-auth from dist (docs/protocol.md#login: nonce → signature → token), run by this node. */
export function authSpec(paths: LocalPaths): ServerSpec {
  return {
    name: "messaging-auth",
    command: process.execPath,
    args: () => [paths.authMain],
    env: (port) => ({ ...process.env, MESSAGING_AUTH_HOST: "127.0.0.1", MESSAGING_AUTH_PORT: String(port) }),
    probe: httpAnswers,
  };
}

import { createHash } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { anvilBinary, ensureDebianBinary } from "./binaries";
import { spawnDetached, stopPid, tailFile, waitReady } from "./detached";
import { LocalServiceError } from "./errors";
import { getFreePort } from "./free-port";
import type { LocalPaths } from "./paths";
import { anvilAnswers, anvilArgs, httpAnswers, natsAnswers, natsArgs, redisAnswers, redisArgs } from "./probes";
import type { LocalProcess } from "./state";
import {
  asClusterOwner,
  ensurePostgresBinDir,
  giveToClusterOwner,
  initPostgresCluster,
  postgresAnswers,
  postgresArgs,
} from "./postgres";

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

/**
 * A PostgreSQL cluster for the ledger, made afresh on every start (initdb takes about half a second): in the
 * system's temp directory, not .local/, because as root it runs as the `postgres` OS user, which must reach its
 * data directory; one directory per project checkout, replaced by the next `npm run local`.
 */
export function postgresSpec(paths: LocalPaths, log: (line: string) => void, user = "local"): ServerSpec {
  const binDir = ensurePostgresBinDir(log);
  const checkout = createHash("sha256").update(paths.root).digest("hex").slice(0, 8);
  // `user` keeps a bench's cluster apart from a running `npm run local`'s in the same checkout.
  const dir = join(tmpdir(), `router-${user}-pg-${checkout}`);
  const dataDir = join(dir, "data");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  giveToClusterOwner(dir);
  initPostgresCluster(binDir, dataDir);
  const launch = (port: number) => asClusterOwner(join(binDir, "postgres"), postgresArgs(dataDir, port));
  return { name: "postgres", command: launch(0).command, args: (port) => launch(port).args, probe: postgresAnswers };
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

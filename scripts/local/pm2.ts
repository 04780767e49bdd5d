import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { LocalServiceError } from "./errors";
import type { LocalPaths } from "./paths";
import { sleep } from "../../shared/timing";

/**
 * The project's own PM2 (node_modules/.bin/pm2) with the stack's own PM2_HOME: its daemon, apps and dump
 * never mix with a PM2 the machine already runs.
 */
export interface Pm2App {
  readonly name: string;
  readonly pid: number;
  readonly status: string;
  readonly restarts: number;
  readonly outLog?: string;
  readonly errLog?: string;
}

export interface Pm2Result {
  readonly status: number | null;
  readonly output: string;
}

/**
 * The router's secrets come from .local/config.json only: the shell's overrides must not leak in, nor the
 * original router's NXTP_* variables (NXTP_MNEMONIC would be read as ROUTER_MNEMONIC, the others refused).
 */
export function pm2Env(paths: LocalPaths, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PM2_HOME: paths.pm2Home,
    ROUTER_CONFIG_FILE: paths.configFile,
    ROUTER_LOG_DIR: paths.logDir,
    ...extra,
  };
  for (const name of Object.keys(env)) {
    if (["ROUTER_ADMIN_TOKEN", "ROUTER_MNEMONIC", "REDIS_URL"].includes(name) || name.startsWith("NXTP_")) {
      delete env[name];
    }
  }
  return env;
}

export function runPm2(paths: LocalPaths, args: readonly string[], timeoutMs = 120_000): Pm2Result {
  const result = spawnSync(paths.pm2Bin, [...args], {
    cwd: paths.root,
    env: pm2Env(paths),
    encoding: "utf8",
    timeout: timeoutMs,
  });
  return { status: result.status, output: `${result.stdout ?? ""}${result.stderr ?? ""}` };
}

/**
 * `pm2 <args>` without blocking the event loop (`pm2 start` waits for every app's `ready`, about 20 s locally):
 * each line PM2 prints (`[PM2] Starting … (2 instances)`, `[PM2] Done.`) goes to `progress` as it comes, so
 * the step's output and heartbeat go on meanwhile.
 */
// eslint-disable-next-line no-control-regex -- the escape character is what PM2's colour codes start with
const ANSI_COLOUR = /\u001b\[[0-9;]*m/g;

export function runPm2Streaming(
  paths: LocalPaths,
  args: readonly string[],
  progress: (line: string) => void,
  timeoutMs = 120_000,
): Promise<Pm2Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(paths.pm2Bin, [...args], { cwd: paths.root, env: pm2Env(paths), timeout: timeoutMs });
    let output = "";
    let partial = "";
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString("utf8");
      output += text;
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        // PM2 colours its prefix even into a pipe.
        const plain = line.replace(ANSI_COLOUR, "").trim();
        if (plain.startsWith("[PM2]")) progress(plain);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, output }));
  });
}

export function pm2List(paths: LocalPaths): Pm2App[] {
  const { status, output } = runPm2(paths, ["jlist"], 30_000);
  const start = output.indexOf("[");
  if (status !== 0 || start < 0) {
    throw new Error(`pm2 jlist failed: ${output.trim().split("\n").slice(-3).join(" ")}`);
  }
  const raw = JSON.parse(output.slice(start)) as Array<{
    name: string;
    pid: number;
    pm2_env?: { status?: string; restart_time?: number; pm_out_log_path?: string; pm_err_log_path?: string };
  }>;
  return raw.map((app) => ({
    name: app.name,
    pid: app.pid,
    status: app.pm2_env?.status ?? "unknown",
    restarts: app.pm2_env?.restart_time ?? 0,
    outLog: app.pm2_env?.pm_out_log_path,
    errLog: app.pm2_env?.pm_err_log_path,
  }));
}

/** pid of the PM2 daemon of this PM2_HOME, when one runs. */
export function pm2DaemonPid(paths: LocalPaths): number | undefined {
  const file = join(paths.pm2Home, "pm2.pid");
  if (!existsSync(file)) {
    return undefined;
  }
  const pid = Number(readFileSync(file, "utf8").trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

export function appLogFiles(app: Pm2App): string[] {
  return [app.errLog, app.outLog].filter((f): f is string => f !== undefined);
}

/**
 * Resolves once every app of `names` is online with no restart (with `wait_ready`, PM2 reports online only
 * after the process sent "ready"). A restart or an errored app fails at once, naming its log files.
 */
export async function waitForApps(
  paths: LocalPaths,
  names: readonly string[],
  timeoutMs: number,
  progress: (line: string) => void,
): Promise<Pm2App[]> {
  const deadline = Date.now() + timeoutMs;
  let lastPending = "";
  for (;;) {
    const apps = pm2List(paths);
    const failed = apps.find((app) => app.restarts > 0 || app.status === "errored" || app.status === "stopped");
    if (failed) {
      throw new LocalServiceError(
        `PM2 app ${failed.name} is ${failed.status} after ${failed.restarts} restart(s)`,
        appLogFiles(failed),
        {
          app: failed.name,
        },
      );
    }
    const pending = names.filter((name) => !apps.some((app) => app.name === name && app.status === "online"));
    if (pending.length === 0) {
      return apps;
    }
    if (Date.now() >= deadline) {
      const first = apps.find((app) => app.name === pending[0]);
      throw new LocalServiceError(
        `PM2 apps not online after ${timeoutMs} ms: ${pending.join(", ")}`,
        first ? appLogFiles(first) : [],
      );
    }
    const line = `waiting for ${pending.join(", ")}`;
    if (line !== lastPending) {
      progress(line);
      lastPending = line;
    }
    await sleep(500);
  }
}

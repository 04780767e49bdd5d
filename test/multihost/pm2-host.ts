import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Host } from "./netns";

/**
 * One bed host's router run as an operator runs it: the project's own pm2 (node_modules/.bin/pm2) starts
 * ecosystem.config.js with a ROUTER_ROLES selection, a PM2_HOME and a log directory of the host's own. Every pm2
 * command runs inside the host's namespace (`ip netns exec`), so the daemon it forks, and every app that daemon
 * starts, live there; the bed's teardown kills them with the namespace.
 */
const ROOT = resolve(__dirname, "../..");
const PM2 = join(ROOT, "node_modules/.bin/pm2");
const PM2_CALL_TIMEOUT_MS = 30_000;
/**
 * `pm2 start` returns once every app sent "ready" (wait_ready; the auction warms its caches first, up to its
 * listen_timeout of 40 s), one app after another: on a loaded 2-core machine that took over 30 s.
 */
export const PM2_START_TIMEOUT_MS = 90_000;

export interface Pm2App {
  readonly name: string;
  readonly pid: number;
  readonly pm2_env: { readonly status: string; readonly restart_time: number };
}

export interface Pm2Host {
  readonly host: Host;
  /** ROUTER_ROLES of this host. */
  readonly roles: string;
  readonly logDir: string;
  pm2(args: readonly string[], timeoutMs?: number): Promise<{ status: number; output: string }>;
  jlist(): Promise<Pm2App[]>;
  app(name: string): Promise<Pm2App>;
  /** The app's stdout so far (its PM2 out log: every JSON log line, every incarnation), growing only. */
  output(app: string): string;
  /** Its stdout and stderr logs, for failure messages. */
  logs(app: string): string;
  /** SIGKILLs the host's PM2 daemon (so it restarts nothing more); the apps die with the bed's namespaces. */
  killDaemon(): void;
}

export interface Pm2HostParams {
  readonly host: Host;
  readonly roles: string;
  /** PM2_HOME and the apps' log directory go under it. */
  readonly dir: string;
  readonly configFile: string;
  /** Further ecosystem settings (AUCTION_INSTANCES, SUBMITTER_STANDBYS …). */
  readonly env?: Readonly<Record<string, string>>;
}

export function pm2Host(p: Pm2HostParams): Pm2Host {
  const home = join(p.dir, `pm2-${p.host.name}`);
  const logDir = join(home, "logs");
  mkdirSync(logDir, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...p.env,
    PM2_HOME: home,
    ROUTER_CONFIG_FILE: p.configFile,
    ROUTER_LOG_DIR: logDir,
    ROUTER_ROLES: p.roles,
  };
  // The shell's secret overrides and the older instance count must not reach the apps.
  for (const name of ["ROUTER_ADMIN_TOKEN", "ROUTER_MNEMONIC", "REDIS_URL", "SUBMITTER_INSTANCES"]) delete env[name];
  // Asynchronous: the jest process keeps serving the bed's doors meanwhile.
  const pm2 = (args: readonly string[], timeoutMs = PM2_CALL_TIMEOUT_MS): Promise<{ status: number; output: string }> =>
    new Promise((done) => {
      execFile(
        "ip",
        ["netns", "exec", p.host.ns, PM2, ...args],
        { cwd: ROOT, env, encoding: "utf8", timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => {
          done({ status: err ? (typeof err.code === "number" ? err.code : 1) : 0, output: `${stdout}${stderr}` });
        },
      );
    });
  const jlist = async (): Promise<Pm2App[]> => {
    const { status, output } = await pm2(["jlist"]);
    const start = output.indexOf("[");
    if (status !== 0 || start < 0)
      throw new Error(`pm2 jlist on ${p.host.name} failed (${status}): ${output.slice(-500)}`);
    return JSON.parse(output.slice(start)) as Pm2App[];
  };
  const readLog = (file: string): string => {
    const path = join(logDir, file);
    return existsSync(path) ? readFileSync(path, "utf8") : "";
  };
  return {
    host: p.host,
    roles: p.roles,
    logDir,
    pm2,
    jlist,
    app: async (name) => {
      const found = (await jlist()).find((a) => a.name === name);
      if (!found) throw new Error(`no PM2 app ${name} on ${p.host.name}`);
      return found;
    },
    output: (app) => readLog(`${app}.out.log`),
    logs: (app) => `${readLog(`${app}.out.log`)}--- ${app} stderr ---\n${readLog(`${app}.error.log`)}`,
    killDaemon: () => {
      try {
        process.kill(Number(readFileSync(join(home, "pm2.pid"), "utf8").trim()), "SIGKILL");
      } catch {
        // never started, or already gone
      }
    },
  };
}

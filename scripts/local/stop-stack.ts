import { basename } from "node:path";
import { readlinkSync } from "node:fs";
import { isAlive, isSameProcess, stopPid } from "./detached";
import type { LocalPaths } from "./paths";
import { pm2DaemonPid, pm2List, runPm2 } from "./pm2";
import { removeState, type LocalState } from "./state";

/** anvil, redis and nats stop within a second of SIGTERM; the auth service within its 5 s shutdown bound. */
const STOP_GRACE_MS = 6_000;

export interface StopReport {
  readonly stopped: string[];
  /** Recorded processes that had exited already (or whose pid now belongs to another program). */
  readonly alreadyGone: string[];
}

/**
 * Stops exactly what the state names, newest first: the PM2 daemon of the stack's PM2_HOME (its apps drain
 * on SIGINT within kill_timeout), then the detached servers by pid. Removes the state file at the end.
 */
export async function stopLocalStack(
  paths: LocalPaths,
  state: LocalState | undefined,
  print: (line: string) => void,
): Promise<StopReport> {
  const report: StopReport = { stopped: [], alreadyGone: [] };
  if (state?.pm2Home !== undefined || pm2DaemonPid(paths) !== undefined) {
    await stopPm2(paths, report, print);
  }
  for (const proc of [...(state?.processes ?? [])].reverse()) {
    if (!isSameProcess(proc)) {
      report.alreadyGone.push(proc.name);
      continue;
    }
    const how = await stopPid(proc.pid, STOP_GRACE_MS);
    report.stopped.push(proc.name);
    print(`  stopped ${proc.name} (pid ${proc.pid}${how === "killed" ? ", SIGKILL after the grace period" : ""})`);
  }
  removeState(paths.stateFile);
  return report;
}

async function stopPm2(paths: LocalPaths, report: StopReport, print: (line: string) => void): Promise<void> {
  const daemon = pm2DaemonPid(paths);
  if (daemon === undefined || !isAlive(daemon)) {
    return;
  }
  let apps: Array<{ name: string; pid: number }> = [];
  try {
    apps = pm2List(paths).filter((app) => app.pid > 0);
  } catch {
    // A wedged daemon: kill below still stops it, and its apps die with it or are caught by pid.
  }
  // `pm2 kill` stops every app (SIGINT, then SIGKILL after kill_timeout) and then the daemon.
  const killed = runPm2(paths, ["kill"], 120_000);
  if (killed.status !== 0) {
    print(`  pm2 kill exited ${String(killed.status)}; stopping its processes by pid`);
  }
  for (const { name, pid } of [...apps, { name: "pm2-daemon", pid: daemon }]) {
    if (isAlive(pid) && isNode(pid)) {
      await stopPid(pid, STOP_GRACE_MS);
    }
    report.stopped.push(name);
  }
  print(
    `  stopped PM2 (daemon pid ${daemon}) and its apps: ${apps.map((a) => `${a.name}(${a.pid})`).join(", ") || "none"}`,
  );
}

/** PM2's daemon and apps run node; a recycled pid running anything else is left alone. */
function isNode(pid: number): boolean {
  try {
    return basename(readlinkSync(`/proc/${pid}/exe`)).startsWith("node");
  } catch {
    return false;
  }
}

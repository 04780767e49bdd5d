import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { LocalServiceError } from "./errors";
import { sleep } from "../../shared/timing";

/**
 * Processes of the local stack outlive `npm run local`: each runs in its own session (detached), writes to
 * its own log file, and is remembered by pid, program and start time, so that stopping never signals a pid
 * the kernel has since given to something else.
 */

export interface DetachedProcess {
  readonly pid: number;
  /** Kernel start time of the process (clock ticks since boot, /proc/<pid>/stat field 22). */
  readonly startTicks?: number;
}

export interface SpawnDetachedParams {
  readonly command: string;
  readonly args: readonly string[];
  readonly logFile: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
}

export function spawnDetached(params: SpawnDetachedParams): DetachedProcess {
  const fd = openSync(params.logFile, "a");
  try {
    const child = spawn(params.command, [...params.args], {
      detached: true,
      stdio: ["ignore", fd, fd],
      env: params.env ?? process.env,
      cwd: params.cwd,
    });
    if (child.pid === undefined) {
      throw new LocalServiceError(`could not start ${params.command}`, [params.logFile]);
    }
    // Spawn errors (EACCES after the pid was known) are reported by the readiness wait, not thrown here.
    child.on("error", () => undefined);
    child.unref();
    return { pid: child.pid, startTicks: startTicksOf(child.pid) };
  } finally {
    closeSync(fd);
  }
}

/** /proc/<pid>/stat: "pid (comm) state ppid … starttime(22) …"; comm may hold spaces and parentheses. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

export function startTicksOf(pid: number): number | undefined {
  const fields = statFields(pid);
  // fields[0] is field 3 (state), so field 22 is fields[19].
  const ticks = fields ? Number(fields[19]) : NaN;
  return Number.isSafeInteger(ticks) ? ticks : undefined;
}

/** Alive and not a zombie (an exited child nobody reaped yet counts as gone). */
export function isAlive(pid: number): boolean {
  const fields = statFields(pid);
  return fields !== undefined && fields[0] !== "Z" && fields[0] !== "X";
}

/**
 * True when `pid` still is the process we started: alive, running `command`, and (when recorded) started at
 * the same kernel time.
 */
export function isSameProcess(proc: DetachedProcess & { readonly command: string }): boolean {
  if (!isAlive(proc.pid)) {
    return false;
  }
  if (proc.startTicks !== undefined && startTicksOf(proc.pid) !== proc.startTicks) {
    return false;
  }
  try {
    return readlinkSync(`/proc/${proc.pid}/exe`) === realpathSync(proc.command);
  } catch {
    return false;
  }
}

async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) {
      return false;
    }
    await sleep(25);
  }
  return true;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // ESRCH: already gone.
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves "already-gone", "stopped" or "killed". */
export async function stopPid(pid: number, graceMs: number): Promise<"already-gone" | "stopped" | "killed"> {
  if (!isAlive(pid)) {
    return "already-gone";
  }
  signal(pid, "SIGTERM");
  if (await goneWithin(pid, graceMs)) {
    return "stopped";
  }
  signal(pid, "SIGKILL");
  if (!(await goneWithin(pid, 3_000))) {
    throw new Error(`pid ${pid} survived SIGKILL`);
  }
  return "killed";
}

export interface WaitReadyParams {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  readonly probe: (attemptTimeoutMs: number) => Promise<boolean>;
  readonly timeoutMs: number;
}

/** Polls `probe` until true; fails at once when the process exits, and after `timeoutMs` otherwise. */
export async function waitReady(params: WaitReadyParams): Promise<void> {
  const deadline = Date.now() + params.timeoutMs;
  let lastProblem: string;
  for (;;) {
    if (!isAlive(params.pid)) {
      throw new LocalServiceError(`${params.name} (pid ${params.pid}) exited before it was ready`, [params.logFile]);
    }
    try {
      if (await params.probe(Math.max(100, Math.min(1_000, deadline - Date.now())))) {
        return;
      }
      lastProblem = "probe answered not ready";
    } catch (err) {
      lastProblem = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() >= deadline) {
      throw new LocalServiceError(`${params.name} not ready after ${params.timeoutMs} ms (${lastProblem})`, [
        params.logFile,
      ]);
    }
    await sleep(50);
  }
}

/** The last `lines` lines of a log file (empty when it does not exist). */
export function tailFile(file: string, lines: number): string {
  try {
    const text = readFileSync(file, "utf8");
    return text
      .split("\n")
      .filter((l) => l !== "")
      .slice(-lines)
      .join("\n");
  } catch {
    return "";
  }
}

import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";

/**
 * What one `npm run local` started, written after every start so that `local:stop` (or the next run) can
 * stop exactly those processes even when the run that started them crashed half-way.
 */
export interface LocalProcess {
  /** e.g. "anvil-1337", "redis-server", "messaging-auth". */
  readonly name: string;
  readonly pid: number;
  /** Absolute path of the program: a recycled pid running something else is never signalled. */
  readonly command: string;
  /** See detached.ts: guards against a recycled pid. */
  readonly startTicks?: number;
  readonly logFile: string;
  readonly port?: number;
}

export interface LocalState {
  readonly version: 1;
  readonly startedAtMs: number;
  /** pid of the `npm run local` that wrote this (it exits once the demo is done). */
  readonly starterPid: number;
  readonly processes: readonly LocalProcess[];
  /** Set once PM2 was started with this PM2_HOME: `local:stop` runs `pm2 kill` there. */
  readonly pm2Home?: string;
  readonly configFile?: string;
  readonly urls?: Readonly<Record<string, string>>;
}

export function emptyState(starterPid: number, nowMs: number): LocalState {
  return { version: 1, startedAtMs: nowMs, starterPid, processes: [] };
}

export function readState(file: string): LocalState | undefined {
  if (!existsSync(file)) {
    return undefined;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new Error(
      `${file} is not valid JSON (${err instanceof Error ? err.message : String(err)}); remove it after checking for leftover processes`,
      { cause: err },
    );
  }
  if (!isState(raw)) {
    throw new Error(`${file} is not a state file of npm run local; remove it after checking for leftover processes`);
  }
  return raw;
}

/** Atomic replace: a crash mid-write must not leave a state file that hides what is running. */
export function writeState(file: string, state: LocalState): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

export function removeState(file: string): void {
  rmSync(file, { force: true });
}

function isState(value: unknown): value is LocalState {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const v = value as Record<string, unknown>;
  return (
    v.version === 1 &&
    typeof v.startedAtMs === "number" &&
    Array.isArray(v.processes) &&
    v.processes.every((p: unknown) => {
      const q = p as Record<string, unknown>;
      return (
        typeof q === "object" &&
        q !== null &&
        typeof q.name === "string" &&
        Number.isSafeInteger(q.pid) &&
        typeof q.command === "string"
      );
    })
  );
}

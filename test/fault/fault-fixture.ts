import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";

/**
 * Submitter child processes for the fault tests: `node <entry>` with the router config file and the chain in
 * the environment, its JSON log lines captured. The entry is dist/services/submitter/main.js (the production
 * process) or test/fault/submitter-entry.js (the same start, plus a crash hook at a named pipeline point).
 */
export const MAIN_ENTRY = resolve(__dirname, "../../dist/services/submitter/main.js");
export const HOOK_ENTRY = resolve(__dirname, "submitter-entry.js");

export interface SubmitterChild {
  readonly name: string;
  readonly child: ChildProcess;
  output(): string;
  lines(): Array<Record<string, unknown>>;
  /** Resolves with the first log line matching `match`, counting only lines after `fromLine`. */
  waitForLine(
    what: string,
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
    fromLine?: number,
  ): Promise<Record<string, unknown>>;
  readonly exited: Promise<void>;
  alive(): boolean;
}

export function assertDistBuilt(): void {
  if (!existsSync(MAIN_ENTRY)) {
    throw new Error(`${MAIN_ENTRY} is missing: run npm run build (or npx tsc -p tsconfig.build.json) first`);
  }
}

export function spawnSubmitterChild(p: {
  name: string;
  configFile: string;
  chainId: number;
  instance: number;
  entry?: string;
  env?: Record<string, string>;
}): SubmitterChild {
  const child = spawn(process.execPath, [p.entry ?? MAIN_ENTRY], {
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      ROUTER_CONFIG_FILE: p.configFile,
      CHAIN_ID: String(p.chainId),
      NODE_APP_INSTANCE: String(p.instance),
      // The lease at its default (1 s, DEFAULT_LEASE_TTL_MS); only the submitter's polls are shortened (default 1 s)
      // so a case's receipts are seen within a tenth of a second.
      SUBMITTER_LEASE_TTL_MS: "1000",
      SUBMITTER_POLL_INTERVAL_MS: "100",
      ...p.env,
    },
  });
  let out = "";
  child.stdout?.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const lines = (): Array<Record<string, unknown>> =>
    out.split("\n").flatMap((l) => {
      try {
        return l.trim().startsWith("{") ? [JSON.parse(l) as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  return {
    name: p.name,
    child,
    output: () => out,
    lines,
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
    waitForLine: async (what, match, timeoutMs = 20_000, fromLine = 0) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines().slice(fromLine).find(match);
        if (found) return found;
        if (Date.now() > deadline) {
          throw new Error(`${p.name}: timed out waiting for ${what}\n--- ${p.name} output ---\n${out.slice(-6000)}`);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
}

export async function killAll(children: readonly SubmitterChild[]): Promise<void> {
  for (const c of children) {
    if (c.alive()) {
      c.child.kill("SIGCONT");
      c.child.kill("SIGKILL");
      await c.exited;
    }
  }
}

export const isMessage =
  (message: string) =>
  (line: Record<string, unknown>): boolean =>
    line.message === message;

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { useStack, type Suite } from "../harness/stack";
import {
  startSubmitterStack,
  submitterConfig,
  txQueueClient,
  type ConfigParams,
  type SubmitterStack,
  type TxQueueClient,
} from "../integration/submitter-fixture";
import { uniquePrefix } from "../harness/prefix";

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
  /** SIGKILL (after a SIGCONT, in case it is stopped), then its exit; at once when it already exited. */
  stop(): Promise<void>;
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
  const alive = (): boolean => child.exitCode === null && child.signalCode === null;
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
    alive,
    stop: async () => {
      if (alive()) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      }
      await exited;
    },
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

export type SubmitterSuite = Suite<SubmitterStack>;

/** The submitter child tests' suite: one chain's stack; automine is back on after each test. */
export function useSubmitterSuite(name: string): SubmitterSuite {
  return useStack<SubmitterStack>({
    name,
    start: startSubmitterStack,
    stop: (s) => s.stack.stop(),
    eachTest: (s, suite) => {
      suite.afterTest(() => s.chain.anvil.setAutomine(true));
      return {};
    },
  });
}

export interface SubmitterCase {
  readonly prefix: string;
  /** The router config file the children read. */
  readonly configFile: string;
  readonly q: TxQueueClient;
}

/** A test's own Redis prefix: its config file in the suite's scratch directory and its queue client, closed after it. */
export async function submitterCase(s: SubmitterSuite, params: ConfigParams = {}): Promise<SubmitterCase> {
  const prefix = uniquePrefix();
  const configFile = join(s.scratchDir, `${prefix}.json`);
  writeFileSync(configFile, JSON.stringify(submitterConfig(s, prefix, params).raw));
  const q = await txQueueClient(s.redisUrl, prefix);
  s.afterTest(() => q.close());
  return { prefix, configFile, q };
}

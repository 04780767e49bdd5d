import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { redisServerBinary } from "../../scripts/local/binaries";
import { redisAnswers, redisArgs } from "../../scripts/local/probes";
import { ANVIL_MNEMONIC } from "../harness/anvil";
import { spawnManaged, waitForReady, type ManagedProcess } from "../harness/child-process";

export const DIST = resolve(__dirname, "../../dist");
export const OPS_ADMIN_TOKEN = "ops-test-admin-token-0123456789abcdef";
const TM_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

/** A router config file for processes that never reach a chain (providers point at a closed port). */
export function writeOpsConfig(
  path: string,
  p: { redisUrl: string; prefix: string; port: number; metricsPort: number; extra?: Record<string, unknown> },
): void {
  const dead = "http://127.0.0.1:9";
  writeFileSync(
    path,
    JSON.stringify({
      adminToken: OPS_ADMIN_TOKEN,
      mnemonic: ANVIL_MNEMONIC,
      host: "127.0.0.1",
      port: p.port,
      metricsPort: p.metricsPort,
      logLevel: "info",
      redisUrl: p.redisUrl,
      redisPrefix: p.prefix,
      network: "local",
      swapPools: [],
      chainConfig: {
        "1": { providers: [dead] },
        "1337": { providers: [dead], transactionManagerAddress: TM_ADDRESS, confirmations: 1 },
      },
      ...p.extra,
    }),
  );
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  output(): string;
  /** IPC messages, as PM2 would receive them (wait_ready's "ready"). */
  messages(): unknown[];
  stop(): Promise<void>;
}

/** A router process from dist/, with an IPC channel like PM2's, and no secret overrides from the shell. */
export function spawnService(main: string, configPath: string, env: Record<string, string> = {}): ServiceProcess {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ROUTER_CONFIG_FILE: configPath, ...env };
  delete childEnv.ROUTER_ADMIN_TOKEN;
  delete childEnv.ROUTER_MNEMONIC;
  delete childEnv.REDIS_URL;
  const child = spawn(process.execPath, [resolve(DIST, main)], {
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let out = "";
  const messages: unknown[] = [];
  child.on("message", (m) => messages.push(m));
  child.stdout?.on("data", (c: Buffer) => (out = (out + c.toString()).slice(-20_000)));
  child.stderr?.on("data", (c: Buffer) => (out = (out + c.toString()).slice(-20_000)));
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  return {
    child,
    output: () => out,
    messages: () => messages,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** A redis-server on a given port, so a test can stop it and start it again where clients reconnect. */
export async function startRedisOn(port: number): Promise<ManagedProcess> {
  const proc = spawnManaged({ name: `redis-server:${port}`, command: redisServerBinary(), args: redisArgs(port) });
  await waitForReady(proc, (timeoutMs) => redisAnswers(port, timeoutMs));
  return proc;
}

export async function getText(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, { headers });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

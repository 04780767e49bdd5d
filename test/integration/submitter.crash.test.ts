import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { isTxJobProgress, type TxJobProgress } from "../../shared/queues";
import { liveChildPids } from "../harness/child-process";
import {
  CHAIN_ID,
  startSubmitterStack,
  submitterConfig,
  txQueueClient,
  type SubmitterStack,
  type TxQueueClient,
} from "./submitter-fixture";
import { waitFor } from "../harness/wait";
import { uniquePrefix } from "../harness/prefix";

/**
 * Crash safety with the real process: `node dist/services/submitter/main.js` is SIGKILLed after its
 * broadcast; a new process finds the job's record and finishes the same transaction instead of sending again.
 */
const MAIN = resolve(__dirname, "../../dist/services/submitter/main.js");

interface SubmitterProcess {
  readonly child: ChildProcess;
  output(): string;
  exited: Promise<void>;
}

function spawnSubmitter(configFile: string, chainId = String(CHAIN_ID)): SubmitterProcess {
  const child = spawn(process.execPath, [MAIN], {
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      ROUTER_CONFIG_FILE: configFile,
      CHAIN_ID: chainId,
      // A killed instance's job lock lapses after ~2 s and is found stalled within 1 s more.
      SUBMITTER_LOCK_DURATION_MS: "2000",
      SUBMITTER_STALLED_INTERVAL_MS: "1000",
      SUBMITTER_POLL_INTERVAL_MS: "100",
    },
  });
  let out = "";
  child.stdout?.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  return { child, output: () => out, exited };
}

describe("submitter crash safety (child process)", () => {
  let s: SubmitterStack;
  let client: TxQueueClient;
  let dir: string;
  const children: SubmitterProcess[] = [];

  beforeAll(async () => {
    if (!existsSync(MAIN)) {
      throw new Error(`${MAIN} is missing: run npm run build first`);
    }
    s = await startSubmitterStack();
    dir = mkdtempSync(join(tmpdir(), "submitter-crash-"));
  });

  afterAll(async () => {
    for (const c of children) {
      if (c.child.exitCode === null && c.child.signalCode === null) {
        c.child.kill("SIGKILL");
        await c.exited;
      }
    }
    await client?.close();
    await s?.stack.stop();
    rmSync(dir, { recursive: true, force: true });
    expect(liveChildPids()).toEqual([]);
  });

  it("exits 1 with a clear message when CHAIN_ID is not a key of chainConfig", async () => {
    const configFile = join(dir, "config-999.json");
    writeFileSync(configFile, JSON.stringify(submitterConfig(s, uniquePrefix()).raw));
    const proc = spawnSubmitter(configFile, "999");
    children.push(proc);
    await proc.exited;
    expect(proc.child.exitCode).toBe(1);
    expect(proc.output()).toContain("CHAIN_ID 999 is not a key of chainConfig (configured: 1, 1337)");
  });

  it("5. SIGKILL after the broadcast: the next process completes the SAME transaction, nonce +1", async () => {
    const prefix = uniquePrefix();
    const { raw } = submitterConfig(s, prefix, { confirmationTimeoutMs: 60_000 });
    const configFile = join(dir, "config.json");
    writeFileSync(configFile, JSON.stringify(raw));
    client = await txQueueClient(s.redisUrl, prefix);
    const nonceBefore = await s.chain.provider.getTransactionCount(s.signer, "latest");
    await s.chain.anvil.setAutomine(false);

    const first = spawnSubmitter(configFile);
    children.push(first);
    const job = await client.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "77",
      recipientAddress: s.routerRecipient,
    });
    const id = job.id ?? "";
    const broadcast = await waitFor<TxJobProgress>(
      "the broadcast progress event",
      async () => client.progress.get(id)?.find(isTxJobProgress),
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- submitter output ---\n${first.output()}`);
    });
    first.child.kill("SIGKILL");
    await first.exited;
    expect(await s.chain.provider.getTransactionReceipt(broadcast.transactionHash)).toBeNull();

    const second = spawnSubmitter(configFile);
    children.push(second);
    // The new process must pick the job up while its transaction is still pending, then see it mined.
    await waitFor(
      "the second process to resume the job",
      async () => (second.output().includes("resuming the job's persisted transaction") ? true : undefined),
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- submitter output ---\n${second.output()}`);
    });
    await s.chain.anvil.setAutomine(true);
    await s.chain.anvil.mine(1);

    const result = await job.waitUntilFinished(client.events, 30_000);
    expect(result.transactionHash).toBe(broadcast.transactionHash);
    await expect(s.chain.provider.getTransactionCount(s.signer, "latest")).resolves.toBe(nonceBefore + 1);
    expect(await client.record(id)).toMatchObject({
      status: "confirmed",
      attempts: [expect.objectContaining({ hash: broadcast.transactionHash })],
    });

    second.child.kill("SIGTERM");
    await second.exited;
    expect(second.child.exitCode).toBe(0);
  });
});

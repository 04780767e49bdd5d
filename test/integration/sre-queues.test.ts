import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue, QueueEvents, UnrecoverableError, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import { getFreePort } from "../harness/free-port";
import { startRedis, type RedisServer } from "../harness/redis";
import { TX_JOB, transferKey, txQueueName } from "../../shared/queues";
import { transferRecordKey, txRecordKey } from "../../shared/coordination/keys";
import { DIST, OPS_ADMIN_TOKEN, writeOpsConfig } from "./metrics-fixture";
import { waitFor } from "../harness/wait";
import { uniquePrefix } from "../harness/prefix";

const CHAIN = 1337;
const USER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const TX_ID = `0x${"ab".repeat(32)}`;

/**
 * `npm run queues -- ...` (dist/scripts/queues.js) against a real Redis holding real BullMQ jobs that a real
 * Worker completed or failed: counts, one job's view (no secret), retry of a failed job that then completes,
 * and refused retries when the effect is on chain (completed job, or the transfer already shows it).
 */
describe("SRE queue command line", () => {
  let redisServer: RedisServer;
  let dir: string;
  let configPath: string;
  let prefix: string;
  let queue: Queue;
  let events: QueueEvents;
  let redis: Redis;
  let fail = true;

  /** The CLI with ROUTER_CONFIG_FILE, or (`cwd`) without it, run in that directory as `npm run` would. */
  const cliIn = (
    cwd: string | undefined,
    ...args: string[]
  ): { status: number | null; stdout: string; stderr: string } => {
    const env: NodeJS.ProcessEnv = { ...process.env, ROUTER_CONFIG_FILE: configPath };
    delete env.ROUTER_ADMIN_TOKEN;
    delete env.ROUTER_MNEMONIC;
    delete env.REDIS_URL;
    if (cwd !== undefined) delete env.ROUTER_CONFIG_FILE;
    const r = spawnSync(process.execPath, [join(DIST, "scripts/queues.js"), ...args], {
      env,
      cwd,
      encoding: "utf8",
      timeout: 20_000,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const cli = (...args: string[]) => cliIn(undefined, ...args);

  /** Runs the queue until `ids` finished: completes jobs, or fails them (the message carries a secret) while `fail`. */
  const work = async (ids: readonly string[]): Promise<void> => {
    const worker = new Worker(
      txQueueName(CHAIN),
      async (job: Job) => {
        if (fail && job.id !== "rl-ok") {
          throw new UnrecoverableError(`execution reverted (token ${OPS_ADMIN_TOKEN} leaked into an error)`);
        }
        return { transactionHash: `0x${"cd".repeat(32)}`, blockNumber: 7 };
      },
      { connection: { host: "127.0.0.1", port: redisServer.port, maxRetriesPerRequest: null }, prefix },
    );
    try {
      await Promise.all(
        ids.map((id) =>
          waitFor(`job ${id} finished`, async () => {
            const state = await (await queue.getJob(id))?.getState();
            return state === "completed" || state === "failed" ? true : undefined;
          }),
        ),
      );
    } finally {
      await worker.close();
    }
  };

  beforeAll(async () => {
    redisServer = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "sre-queues-"));
    configPath = join(dir, "config.json");
    prefix = uniquePrefix();
    writeOpsConfig(configPath, {
      redisUrl: redisServer.url,
      prefix,
      port: await getFreePort(),
      metricsPort: await getFreePort(),
    });
    const connection = { host: "127.0.0.1", port: redisServer.port, maxRetriesPerRequest: null };
    queue = new Queue(txQueueName(CHAIN), { connection, prefix });
    events = new QueueEvents(txQueueName(CHAIN), { connection, prefix });
    redis = new Redis(connection);

    const removal = {
      chainId: CHAIN,
      assetId: "0x0000000000000000000000000000000000000000",
      amount: "5",
      recipientAddress: USER,
    };
    await queue.add(TX_JOB.removeLiquidity, { ...removal, requestId: "req-ok" }, { jobId: "rl-ok", attempts: 3 });
    await queue.add(TX_JOB.removeLiquidity, { ...removal, requestId: "req-fail" }, { jobId: "rl-fail", attempts: 3 });
    const txData = { transactionId: TX_ID, user: USER, sendingChainId: 1, receivingChainId: CHAIN, amount: "100" };
    await queue.add(
      TX_JOB.prepareReceiver,
      { chainId: CHAIN, sender: { chainId: 1, txData } },
      { jobId: "prep-done", attempts: 3 },
    );
    await work(["rl-ok", "rl-fail", "prep-done"]);
    // rl-fail sent a transaction before failing: its send record, as the submitter writes it.
    const record = {
      version: 2,
      jobId: "rl-fail",
      jobName: TX_JOB.removeLiquidity,
      chainId: CHAIN,
      nonce: 4,
      status: "sending",
      bumps: 1,
      attempts: [
        {
          hash: `0x${"11".repeat(32)}`,
          raw: "0xf86c-signed-bytes",
          nonce: 4,
          fee: { gasPrice: "1000000000" },
          gasLimit: "100000",
          sentAtMs: Date.now() - 60_000,
        },
        {
          hash: `0x${"22".repeat(32)}`,
          raw: "0xf86c-signed-bytes-2",
          nonce: 4,
          fee: { gasPrice: "1200000000" },
          gasLimit: "100000",
          sentAtMs: Date.now() - 30_000,
        },
      ],
      lastError: { code: "TRANSACTION_REVERTED", message: "execution reverted", atMs: Date.now() },
      createdAtMs: Date.now() - 60_000,
      updatedAtMs: Date.now(),
    };
    await redis.hset(txRecordKey(prefix, CHAIN, "rl-fail"), { version: "2", record: JSON.stringify(record) });
    // prep-done failed, but the receiving side is on chain already (prepared by an earlier run).
    await redis.set(
      transferRecordKey(prefix, CHAIN, transferKey(TX_ID, USER)),
      JSON.stringify({ chainId: CHAIN, status: "Prepared", txData }),
    );
  }, 60_000);

  afterAll(async () => {
    await events?.close();
    await queue?.close();
    redis?.disconnect();
    await redisServer?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("list: counts per state of every chain's queue", () => {
    const r = cli("list");
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toMatch(
      /^queue\s+waiting\s+active\s+delayed\s+prioritized\s+waiting-children\s+completed\s+failed\s+paused$/,
    );
    expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/^tx-1\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+no$/)]));
    expect(lines).toEqual(
      expect.arrayContaining([expect.stringMatching(/^tx-1337\s+0\s+0\s+0\s+0\s+0\s+1\s+2\s+no$/)]),
    );
  });

  it("list QUEUE [STATE]: the job ids per state, for show and retry", () => {
    const r = cli("list", "tx-1337");
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual([
      "tx-1337 completed: 1",
      "  rl-ok",
      "tx-1337 failed: 2",
      expect.stringMatching(/^ {2}(rl-fail|prep-done)$/),
      expect.stringMatching(/^ {2}(rl-fail|prep-done)$/),
    ]);
    expect(cli("list", "tx-1337", "completed").stdout).toBe("tx-1337 completed: 1\n  rl-ok\n");
    expect(cli("list", "tx-1337", "waiting").stdout).toBe("tx-1337 waiting: 0\n");
    expect(cli("list", "tx-1337", "done")).toMatchObject({ status: 1, stderr: expect.stringContaining("STATE must") });
  });

  it("--help needs no config; without config.json the running local stack's .local/config.json is found", () => {
    const empty = mkdtempSync(join(tmpdir(), "sre-queues-cwd-"));
    try {
      const help = cliIn(empty, "--help");
      expect(help).toMatchObject({ status: 0, stdout: expect.stringContaining("usage: npm run queues -- list") });
      expect(cliIn(empty, "list")).toMatchObject({ status: 1, stderr: expect.stringContaining("config.json") });
      // What npm run local leaves while it runs: its state file (a live process: this one) and its config.
      mkdirSync(join(empty, ".local"));
      copyFileSync(configPath, join(empty, ".local", "config.json"));
      const state = {
        version: 1,
        startedAtMs: Date.now(),
        starterPid: process.pid,
        processes: [{ name: "redis-server", pid: process.pid, command: process.execPath, logFile: "x.log" }],
        configFile: join(empty, ".local", "config.json"),
      };
      writeFileSync(join(empty, ".local", "state.json"), JSON.stringify(state));
      const local = cliIn(empty, "list", "tx-1337", "completed");
      expect(local).toMatchObject({ status: 0, stdout: "tx-1337 completed: 1\n  rl-ok\n" });
      expect(local.stderr).toContain("using the running local stack's");
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("show: data, attempts, last error, transactions and transfer state, and never a secret", () => {
    const r = cli("show", "rl-fail");
    expect(r.status).toBe(0);
    const view = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(view).toMatchObject({
      id: "rl-fail",
      queue: "tx-1337",
      name: TX_JOB.removeLiquidity,
      state: "failed",
      attempts: { made: 1, max: 3 },
      data: { requestId: "req-fail", amount: "5" },
      transactions: [
        { nonce: 4, hash: `0x${"11".repeat(32)}`, fee: { gasPrice: "1000000000" }, status: "sending" },
        { nonce: 4, hash: `0x${"22".repeat(32)}`, fee: { gasPrice: "1200000000" }, status: "sending" },
      ],
    });
    expect(String(view.lastError)).toContain("execution reverted");
    expect(r.stdout).not.toContain(OPS_ADMIN_TOKEN);
    expect(r.stdout).not.toContain("signed-bytes");
    const prep = JSON.parse(cli("show", "prep-done").stdout) as { transfer: unknown };
    expect(prep.transfer).toEqual({
      transactionId: TX_ID,
      sending: { chainId: 1 },
      receiving: { chainId: CHAIN, status: "Prepared" },
    });
    expect(cli("show", "no-such-job")).toMatchObject({ status: 1, stderr: expect.stringContaining("no job") });
  });

  it("retry: refuses a completed job and a job whose effect is on chain", async () => {
    const completed = cli("retry", "rl-ok");
    expect(completed.status).toBe(1);
    expect(completed.stderr).toContain("refused to retry rl-ok: the job completed");
    const onChain = cli("retry", "prep-done");
    expect(onChain.status).toBe(1);
    expect(onChain.stderr).toContain("the receiving side is already Prepared on chain 1337");
    expect(await (await queue.getJob("rl-ok"))?.getState()).toBe("completed");
    expect(await (await queue.getJob("prep-done"))?.getState()).toBe("failed");
  });

  it("retry: brings a failed job back, and the worker then completes it", async () => {
    const r = cli("retry", "rl-fail");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("rl-fail: retried");
    expect(await (await queue.getJob("rl-fail"))?.getState()).toBe("waiting");
    fail = false;
    await work(["rl-fail"]);
    expect(await (await queue.getJob("rl-fail"))?.getState()).toBe("completed");
  });

  it("retry-failed: retries only what is safe, per job", () => {
    const r = cli("retry-failed", "tx-1337");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("prep-done: not retried: the receiving side is already Prepared");
    expect(r.stdout).toContain("tx-1337: 0 retried, 1 refused");
    expect(cli("retry-failed", "tx-9")).toMatchObject({ status: 1, stderr: expect.stringContaining("unknown queue") });
  });

  it("pause, resume and clean", async () => {
    expect(cli("pause", "tx-1337").status).toBe(0);
    expect(await queue.isPaused()).toBe(true);
    expect(cli("list").stdout).toMatch(/^tx-1337\s.*\syes$/m);
    expect(cli("resume", "tx-1337").status).toBe(0);
    expect(await queue.isPaused()).toBe(false);
    expect(cli("clean", "tx-1337", "completed", "1h")).toMatchObject({
      status: 0,
      stdout: expect.stringContaining("removed 0 completed"),
    });
    const cleaned = cli("clean", "tx-1337", "completed", "0s");
    expect(cleaned.stdout).toContain("removed 2 completed job(s)");
    expect(await queue.getJob("rl-ok")).toBeUndefined();
    expect(cli("clean", "tx-1337", "bogus", "1h").status).toBe(1);
  });
});

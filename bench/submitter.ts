/**
 * `npm run bench:submitter`: the submitter's throughput on two throwaway anvil chains (1337, 1338; 1 s blocks)
 * and a redis-server, with `confirmations` 1 and then 12. Per scenario, both chains at once:
 * - pipelined (today's design): 500 remove-liquidity jobs enqueued at once per chain, submitter concurrency 500;
 * - one-at-a-time (the previous design, concurrency 1), measured in the same run on a few jobs (BENCH_BASELINE_JOBS).
 * Prints per chain: transactions/s (completions between the first and the last completion: the steady rate
 * once the pipeline is full), wall time, enqueue → broadcast and enqueue → confirmed p50/p99, nonce errors
 * (log lines naming a used nonce), and the ratio to one-at-a-time. A swap is one transaction per chain, so
 * "swaps/s carried" is the two chains' sum halved. Self-contained on purpose: bench/ must not import test/.
 * The last line is the same figures as JSON (support.ts printFigures): bench/compare.ts and the CI guard read it.
 * Env: BENCH_JOBS (500), BENCH_BASELINE_JOBS (6), BENCH_CONFIRMATIONS ("1,12"), BENCH_LEDGER (off; "on": the config
 * has a `ledger` section, so every confirmed transaction is named to the ledger queue before its job completes, and
 * the run checks the queue holds one book-transaction job per transaction).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { PassThrough } from "node:stream";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Queue, QueueEvents, type Job } from "bullmq";
import {
  Contract,
  ContractFactory,
  JsonRpcProvider,
  NonceManager,
  Wallet,
  getAddress,
  hexlify,
  parseEther,
  toQuantity,
  type Signer,
} from "ethers";
import { startSubmitter, type RunningSubmitter } from "../services/submitter/start-submitter";
import { anvilBinary, redisServerBinary } from "../scripts/local/binaries";
import { getFreePort } from "../scripts/local/free-port";
import { anvilAnswers, anvilArgs, redisAnswers, redisArgs, whileStarting } from "../scripts/local/probes";
import { packageArtifact, type NxtpContractName } from "../scripts/nxtp-package";
import { ledgerWithDefaults, loadConfig } from "../shared/config";
import { createLogger } from "../shared/logging/create-logger";
import {
  LEDGER_QUEUE_NAME,
  TX_JOB,
  txJobId,
  txJobOptions,
  txQueueName,
  type TxJobData,
  type TxJobResult,
} from "../shared/queues";
import { pollUntil } from "../shared/timing";
import { percentile, printFigures } from "./support";

const CHAIN_IDS = [1337, 1338] as const;
/** anvil's account 0 (public test key): deploys and funds. */
const DEPLOYER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const AMOUNT = 1000n;
const NONCE_ERROR = /NONCE_TOO_LOW|nonce already used|NONCE_RETRIES_EXHAUSTED|NONCE_TAKEN/;
/** lease-keeper.ts's warning: an event-loop stall longer than the lease TTL hands every job of the chain back. */
const LEASE_LOST = /sender lease lost/;
/** shared/coordination/lease-loop.ts's warning: a lease lapsed during a stall, resumed in the same term (no handback). */
const LEASE_RESUMED = /sender lease lapsed during a \d+ ms stall and was resumed/;

interface ChainSetup {
  readonly chainId: number;
  readonly rpcUrl: string;
  readonly tm: string;
  readonly token: string;
}

interface ChainFigures {
  readonly chainId: number;
  readonly jobs: number;
  readonly txPerSec: number;
  readonly wallSec: number;
  readonly broadcastP50: number;
  readonly broadcastP99: number;
  readonly confirmedP50: number;
  readonly confirmedP99: number;
}

async function main(): Promise<void> {
  const jobs = positive(process.env.BENCH_JOBS, 500);
  const baselineJobs = positive(process.env.BENCH_BASELINE_JOBS, 6);
  const confirmations = (process.env.BENCH_CONFIRMATIONS ?? "1,12").split(",").map((c) => positive(c, 1));
  const children: ChildProcess[] = [];
  // Stopped from outside (Ctrl-C, a timeout's SIGTERM): the servers go too, not left running without a parent.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      children.forEach((c) => c.kill("SIGKILL"));
      process.exit(1);
    });
  }
  try {
    const redisPort = await getFreePort();
    children.push(spawn(redisServerBinary(), redisArgs(redisPort), { stdio: "ignore" }));
    const rpcUrls: string[] = [];
    const anvilPorts: number[] = [];
    for (const chainId of CHAIN_IDS) {
      const port = await getFreePort();
      children.push(spawn(anvilBinary(), anvilArgs(port, chainId, { blockTimeSec: 1 }), { stdio: "ignore" }));
      rpcUrls.push(`http://127.0.0.1:${port}`);
      anvilPorts.push(port);
    }
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    await pollUntil(
      "redis",
      whileStarting(() => redisAnswers(redisPort, 500)),
    );
    for (const [i, port] of anvilPorts.entries()) {
      await pollUntil(
        "anvil",
        whileStarting(() => anvilAnswers(port, CHAIN_IDS[i], 500)),
      );
    }
    // A port handed out by getFreePort can be taken by another process before our server binds it (other test
    // runs share the machine): the server then exits, and the probe above was answered by someone else's.
    const exited = children.find((c) => c.exitCode !== null || c.signalCode !== null);
    if (exited)
      throw new Error(`${exited.spawnfile} exited at start (${exited.exitCode ?? exited.signalCode}): port taken?`);
    const router = Wallet.createRandom();
    const funding = BigInt(jobs + baselineJobs) * BigInt(confirmations.length) * AMOUNT;
    const chains: ChainSetup[] = [];
    for (const [i, chainId] of CHAIN_IDS.entries()) {
      const provider = new JsonRpcProvider(rpcUrls[i], chainId, {
        staticNetwork: true,
        batchMaxCount: 1,
        cacheTimeout: -1,
      });
      await provider.send("anvil_setBalance", [router.address, toQuantity(parseEther("100000"))]);
      const deployed = await deployAndFund(
        new NonceManager(new Wallet(DEPLOYER_KEY, provider)),
        chainId,
        router.address,
        funding,
      );
      chains.push({ chainId, rpcUrl: rpcUrls[i], ...deployed });
      // Not destroyed: ethers may still poll for a receipt it no longer needs; the process exits at the end.
    }
    process.stdout.write(
      `submitter bench: 2 anvil chains (1 s blocks), ${jobs} jobs in flight per chain; one-at-a-time on ${baselineJobs} jobs; ` +
        `ledger naming ${process.env.BENCH_LEDGER === "on" ? "on" : "off"}\n`,
    );
    const figures: Record<string, number> = {};
    for (const c of confirmations) {
      const pipelined = await runScenario({
        redisUrl,
        chains,
        mnemonic: router.mnemonic?.phrase ?? "",
        confirmations: c,
        jobs,
        concurrency: jobs,
      });
      const baseline = await runScenario({
        redisUrl,
        chains,
        mnemonic: router.mnemonic?.phrase ?? "",
        confirmations: c,
        jobs: baselineJobs,
        concurrency: 1,
      });
      printScenario(c, pipelined, baseline);
      Object.assign(figures, scenarioFigures(c, pipelined));
    }
    printFigures("submitter", figures);
  } finally {
    children.forEach((c) => c.kill("SIGKILL"));
  }
}

interface ScenarioResult {
  readonly figures: readonly ChainFigures[];
  readonly nonceErrors: number;
  /** Sender leases lost during the run: each hands every running job back; a sound run has none. */
  readonly leaseLosses: number;
  /** Sender leases that lapsed during a stall and were resumed in the same term (nothing handed back). */
  readonly leaseResumes: number;
  /** Event-loop delay of the process running both submitters (the lease TTL must stay well above the max). */
  readonly loopDelayP99Ms: number;
  readonly loopDelayMaxMs: number;
}

async function runScenario(p: {
  redisUrl: string;
  chains: readonly ChainSetup[];
  mnemonic: string;
  confirmations: number;
  jobs: number;
  concurrency: number;
}): Promise<ScenarioResult> {
  const prefix = `bench${randomUUID().slice(0, 8)}`;
  const chainConfig: Record<string, unknown> = { "1": { providers: [p.chains[0].rpcUrl] } };
  for (const c of p.chains) {
    chainConfig[String(c.chainId)] = {
      providers: [c.rpcUrl],
      transactionManagerAddress: c.tm,
      confirmations: p.confirmations,
      confirmationTimeoutMs: 60_000,
    };
  }
  const { config: loaded } = loadConfig(
    {
      adminToken: "bench-admin-token-0123456789",
      mnemonic: p.mnemonic,
      redisUrl: p.redisUrl,
      redisPrefix: prefix,
      swapPools: [],
      chainConfig,
    },
    {},
  );
  // A ledger section turns the naming on; no ledger process drains the queue here.
  const ledger = process.env.BENCH_LEDGER === "on";
  const config = ledger
    ? { ...loaded, ledger: ledgerWithDefaults({ databaseUrl: "postgres://bench.invalid/ledger" }) }
    : loaded;
  const logStream = new PassThrough();
  let nonceErrors = 0;
  let leaseLosses = 0;
  let leaseResumes = 0;
  logStream.on("data", (chunk: Buffer) => {
    const lines = chunk.toString("utf8").split("\n");
    nonceErrors += lines.filter((line) => NONCE_ERROR.test(line)).length;
    leaseLosses += lines.filter((line) => LEASE_LOST.test(line)).length;
    leaseResumes += lines.filter((line) => LEASE_RESUMED.test(line)).length;
  });
  const logger = createLogger({ level: "warn", service: "bench", stream: logStream });
  const url = new URL(p.redisUrl);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const submitters: RunningSubmitter[] = [];
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const queues: Array<Queue<TxJobData, TxJobResult>> = [];
  const events: QueueEvents[] = [];
  // Under PM2 a stuck sender term crashes the process and a restart takes the lease again; the bench has no
  // restart, so that chain's jobs would wait out the 30 min poll in silence. It fails the run at once instead.
  let stuck: { chainId: number; message: string } | undefined;
  try {
    for (const c of p.chains) {
      submitters.push(
        await startSubmitter({
          config,
          logger,
          chainId: c.chainId,
          options: {
            concurrency: p.concurrency,
            pollIntervalMs: 500,
            onStuck: (err) => {
              stuck ??= { chainId: c.chainId, message: err.message };
            },
          },
        }),
      );
    }
    const figures = await Promise.all(
      p.chains.map(async (c) => {
        const queue = new Queue<TxJobData, TxJobResult>(txQueueName(c.chainId), { connection, prefix });
        const queueEvents = new QueueEvents(txQueueName(c.chainId), { connection, prefix });
        queues.push(queue);
        events.push(queueEvents);
        const broadcastAtMs = new Map<string, number>();
        queueEvents.on("progress", ({ jobId }) => {
          if (!broadcastAtMs.has(jobId)) broadcastAtMs.set(jobId, Date.now());
        });
        await queueEvents.waitUntilReady();
        const startedAtMs = Date.now();
        const added = await queue.addBulk(
          Array.from({ length: p.jobs }, () => {
            const requestId = randomUUID();
            const jobId = txJobId(TX_JOB.removeLiquidity, requestId);
            return {
              name: TX_JOB.removeLiquidity,
              data: {
                chainId: c.chainId,
                assetId: c.token,
                amount: AMOUNT.toString(),
                // One recipient per job: a withdrawal identical to one mined since its creation counts as already
                // paid (services/submitter/operations/find-own-withdrawal.ts), so identical jobs would not send.
                // Random bytes, not Wallet.createRandom(): that derives a mnemonic's key (PBKDF2, 3-26 ms each),
                // and 500 of them blocked this process, submitters included, for 1.5-13 s: longer than the sender
                // lease's TTL, so the submitters lost their leases mid-run and handed every job back.
                recipientAddress: getAddress(hexlify(randomBytes(20))),
                requestId,
              },
              opts: txJobOptions(TX_JOB.removeLiquidity, jobId),
            };
          }),
        );
        await pollUntil(
          `chain ${c.chainId}: all jobs`,
          async () => {
            if (stuck) {
              throw new Error(`chain ${stuck.chainId}: sender term stuck (${stuck.message}); the run cannot finish`);
            }
            const counts = await queue.getJobCounts("completed", "failed");
            if (counts.failed > 0) throw new Error(`chain ${c.chainId}: ${counts.failed} job(s) failed`);
            return counts.completed === p.jobs;
          },
          30 * 60_000,
        );
        const done = await Promise.all(added.map((j) => queue.getJob(j.id ?? "")));
        return figuresOf(c.chainId, done, broadcastAtMs, startedAtMs);
      }),
    );
    loopDelay.disable();
    if (ledger) {
      const ledgerQueue = new Queue(LEDGER_QUEUE_NAME, { connection, prefix });
      const named = (await ledgerQueue.getJobCounts("waiting")).waiting;
      await ledgerQueue.close();
      const sent = figures.reduce((sum, f) => sum + f.jobs, 0);
      if (named !== sent) throw new Error(`ledger: ${named} book-transaction job(s) for ${sent} transactions`);
    }
    return {
      figures,
      nonceErrors,
      leaseLosses,
      leaseResumes,
      loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
      loopDelayMaxMs: loopDelay.max / 1e6,
    };
  } finally {
    await Promise.all(submitters.map((s) => s.stop()));
    await Promise.all(events.map((e) => e.close()));
    await Promise.all(queues.map((q) => q.close()));
  }
}

function figuresOf(
  chainId: number,
  jobs: ReadonlyArray<Job<TxJobData, TxJobResult> | undefined>,
  broadcastAtMs: ReadonlyMap<string, number>,
  startedAtMs: number,
): ChainFigures {
  const done = jobs.filter((j): j is Job<TxJobData, TxJobResult> => j?.finishedOn !== undefined);
  const finished = done.map((j) => j.finishedOn ?? 0).sort((a, b) => a - b);
  const confirmed = done.map((j) => (j.finishedOn ?? 0) - j.timestamp).sort((a, b) => a - b);
  const broadcast = done
    .map((j) => (broadcastAtMs.get(j.id ?? "") ?? j.finishedOn ?? 0) - j.timestamp)
    .sort((a, b) => a - b);
  const spanSec = (finished[finished.length - 1] - finished[0]) / 1000;
  // A single job has no steady rate: fall back to one per its own latency.
  const txPerSec = done.length > 1 && spanSec > 0 ? (done.length - 1) / spanSec : 1000 / confirmed[0];
  return {
    chainId,
    jobs: done.length,
    txPerSec,
    wallSec: (finished[finished.length - 1] - startedAtMs) / 1000,
    broadcastP50: percentile(broadcast, 0.5),
    broadcastP99: percentile(broadcast, 0.99),
    confirmedP50: percentile(confirmed, 0.5),
    confirmedP99: percentile(confirmed, 0.99),
  };
}

function printScenario(confirmations: number, pipelined: ScenarioResult, baseline: ScenarioResult): void {
  const lines = [`\nconfirmations ${confirmations}`];
  for (const [i, f] of pipelined.figures.entries()) {
    const base = baseline.figures[i];
    lines.push(
      `  chain ${f.chainId}: ${f.txPerSec.toFixed(1)} tx/s (${f.jobs} jobs, wall ${f.wallSec.toFixed(1)} s); ` +
        `enqueue→broadcast p50 ${f.broadcastP50} ms p99 ${f.broadcastP99} ms; enqueue→confirmed p50 ${f.confirmedP50} ms p99 ${f.confirmedP99} ms; ` +
        `one-at-a-time ${base.txPerSec.toFixed(2)} tx/s (confirmed p50 ${base.confirmedP50} ms) → ×${(f.txPerSec / base.txPerSec).toFixed(1)}`,
    );
  }
  const swaps = pipelined.figures.reduce((sum, f) => sum + f.txPerSec, 0) / 2;
  const baseSwaps = baseline.figures.reduce((sum, f) => sum + f.txPerSec, 0) / 2;
  lines.push(
    `  swaps/s carried (two chains): ${swaps.toFixed(1)} (one-at-a-time ${baseSwaps.toFixed(2)}); nonce errors: ${pipelined.nonceErrors} (one-at-a-time ${baseline.nonceErrors}); ` +
      `sender leases lost: ${pipelined.leaseLosses}, lapsed and resumed: ${pipelined.leaseResumes}`,
  );
  lines.push(
    `  event-loop delay with ${pipelined.figures[0]?.jobs ?? 0} jobs in flight per chain: p99 ${pipelined.loopDelayP99Ms.toFixed(0)} ms, max ${pipelined.loopDelayMaxMs.toFixed(0)} ms`,
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** The pipelined scenario's figures, named as bench/compare.ts prints them. */
function scenarioFigures(confirmations: number, pipelined: ScenarioResult): Record<string, number> {
  const at = `confirmations ${confirmations}`;
  const out: Record<string, number> = {};
  for (const f of pipelined.figures) {
    out[`${at}, chain ${f.chainId}: tx/s`] = f.txPerSec;
    out[`${at}, chain ${f.chainId}: enqueue→broadcast p50 ms`] = f.broadcastP50;
    out[`${at}, chain ${f.chainId}: enqueue→confirmed p50 ms`] = f.confirmedP50;
  }
  out[`${at}: nonce errors`] = pipelined.nonceErrors;
  out[`${at}: sender leases lost`] = pipelined.leaseLosses;
  out[`${at}: sender leases resumed`] = pipelined.leaseResumes;
  out[`${at}: event-loop delay p99 ms`] = pipelined.loopDelayP99Ms;
  out[`${at}: event-loop delay max ms`] = pipelined.loopDelayMaxMs;
  return out;
}

function positive(raw: string | undefined, fallback: number): number {
  const value = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`expected a positive integer, got ${raw}`);
  return value;
}

/** TransactionManager + TestERC20, the router approved and funded with `amount` TEST. */
async function deployAndFund(
  deployer: Signer,
  chainId: number,
  router: string,
  amount: bigint,
): Promise<{ tm: string; token: string }> {
  const deploy = async (name: NxtpContractName, args: unknown[]): Promise<Contract> => {
    const { abi, bytecode } = packageArtifact(name);
    const c = await new ContractFactory(abi, bytecode, deployer).deploy(...args);
    await c.waitForDeployment();
    return new Contract(await c.getAddress(), abi, deployer);
  };
  const send = async (c: Contract, fn: string, args: unknown[]): Promise<void> => {
    await (await c.getFunction(fn).send(...args)).wait();
  };
  const tm = await deploy("TransactionManager", [chainId]);
  const token = await deploy("TestERC20", []);
  const [tmAddress, tokenAddress] = [await tm.getAddress(), await token.getAddress()];
  await send(tm, "addRouter", [router]);
  await send(tm, "addAssetId", [tokenAddress]);
  await send(token, "approve", [tmAddress, amount]);
  await send(tm, "addLiquidityFor", [amount, tokenAddress, router]);
  return { tm: tmAddress, token: tokenAddress };
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);

/**
 * `npm run bench:submitter [-- <jobs>]`: pushes N remove-liquidity jobs (default 200) through one chain's
 * queue with one in-process submitter (confirmations 1) against a throwaway anvil (automine) and
 * redis-server, then prints transactions/s and the median and p95 job latency (enqueue → completed).
 * Self-contained on purpose: bench/ is compiled with the app and must not import test/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { accessSync, constants } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { Queue, type Job } from "bullmq";
import { Contract, ContractFactory, JsonRpcProvider, NonceManager, Wallet, parseEther, toQuantity, type Signer } from "ethers";
import { Redis } from "ioredis";
import { startSubmitter } from "../services/submitter/start-submitter";
import { loadArtifact, type NxtpArtifactName } from "../shared/chain/artifacts";
import { loadConfig } from "../shared/config";
import { createLogger } from "../shared/logging/create-logger";
import { TX_JOB, TX_JOB_DEFAULTS, txJobId, txQueueName, type TxJobData, type TxJobResult } from "../shared/queues";

const CHAIN_ID = 1337;
/** anvil's account 0 (public test key): deploys and funds. */
const DEPLOYER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

async function main(): Promise<void> {
  const jobs = Number(process.argv[2] ?? process.env.BENCH_JOBS ?? 200);
  if (!Number.isSafeInteger(jobs) || jobs < 1) {
    throw new Error(`job count must be a positive integer, got ${process.argv[2]}`);
  }
  const children: ChildProcess[] = [];
  try {
    const [redisPort, anvilPort] = [await freePort(), await freePort()];
    children.push(spawn(binary("redis-server", ["/usr/bin/redis-server"]), ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" }));
    const anvilBin = join(dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin", "anvil");
    children.push(spawn(anvilBin, ["--host", "127.0.0.1", "--port", String(anvilPort), "--chain-id", String(CHAIN_ID), "--silent"], { stdio: "ignore" }));
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    const rpcUrl = `http://127.0.0.1:${anvilPort}`;
    await waitUntil("redis", () => redisAnswers(redisUrl));
    await waitUntil("anvil", () => fetch(rpcUrl, rpcBody("eth_chainId", [])).then((r) => r.ok, () => false));
    await runBench({ jobs, redisUrl, rpcUrl });
  } finally {
    children.forEach((c) => c.kill("SIGKILL"));
  }
}

async function runBench(p: { jobs: number; redisUrl: string; rpcUrl: string }): Promise<void> {
  const provider = new JsonRpcProvider(p.rpcUrl, CHAIN_ID, { staticNetwork: true, batchMaxCount: 1, cacheTimeout: -1 });
  const router = Wallet.createRandom();
  const mnemonic = router.mnemonic?.phrase ?? "";
  await provider.send("anvil_setBalance", [router.address, toQuantity(parseEther("1000"))]);
  const { tm, token } = await deployAndFund(new NonceManager(new Wallet(DEPLOYER_KEY, provider)), router.address, BigInt(p.jobs) * 1000n);
  const prefix = `bench${randomUUID().slice(0, 8)}`;
  const { config } = loadConfig({
    adminToken: "bench-admin-token-0123456789",
    mnemonic,
    redisUrl: p.redisUrl,
    redisPrefix: prefix,
    swapPools: [],
    chainConfig: {
      "1": { providers: [p.rpcUrl] },
      [String(CHAIN_ID)]: { providers: [p.rpcUrl], transactionManagerAddress: tm, confirmations: 1 },
    },
  }, {});
  const logger = createLogger({ level: "warn", service: "bench" });
  const submitter = await startSubmitter({ config, logger, chainId: CHAIN_ID });
  const url = new URL(p.redisUrl);
  const queue = new Queue<TxJobData, TxJobResult>(txQueueName(CHAIN_ID), { connection: { host: url.hostname, port: Number(url.port) }, prefix });
  try {
    const recipient = Wallet.createRandom().address;
    const startedAtMs = Date.now();
    const added = await queue.addBulk(Array.from({ length: p.jobs }, () => {
      const requestId = randomUUID();
      return {
        name: TX_JOB.removeLiquidity,
        data: { chainId: CHAIN_ID, assetId: token, amount: "1000", recipientAddress: recipient, requestId },
        opts: { ...TX_JOB_DEFAULTS, jobId: txJobId(TX_JOB.removeLiquidity, requestId) },
      };
    }));
    await waitUntil("all jobs", async () => {
      const counts = await queue.getJobCounts("completed", "failed");
      if (counts.failed > 0) throw new Error(`${counts.failed} job(s) failed`);
      return counts.completed === p.jobs;
    }, 30 * 60_000);
    report(await Promise.all(added.map((j) => queue.getJob(j.id ?? ""))), startedAtMs);
  } finally {
    await submitter.stop();
    await queue.close();
    provider.destroy();
  }
}

function report(jobs: ReadonlyArray<Job<TxJobData, TxJobResult> | undefined>, startedAtMs: number): void {
  const done = jobs.filter((j): j is Job<TxJobData, TxJobResult> => j?.finishedOn !== undefined);
  const latencies = done.map((j) => (j.finishedOn ?? 0) - j.timestamp).sort((a, b) => a - b);
  const lastMs = Math.max(...done.map((j) => j.finishedOn ?? 0));
  const seconds = (lastMs - startedAtMs) / 1000;
  const pct = (q: number): number => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)];
  process.stdout.write(
    `jobs: ${done.length}\nwall: ${seconds.toFixed(2)} s\nthroughput: ${(done.length / seconds).toFixed(1)} tx/s\n` +
      `latency (enqueue → completed): median ${pct(0.5)} ms, p95 ${pct(0.95)} ms, max ${latencies[latencies.length - 1]} ms\n`,
  );
}

/** TransactionManager + TestERC20, the router approved and funded with `amount` TEST. */
async function deployAndFund(deployer: Signer, router: string, amount: bigint): Promise<{ tm: string; token: string }> {
  const deploy = async (name: NxtpArtifactName, args: unknown[]): Promise<Contract> => {
    const { abi, bytecode } = loadArtifact(name);
    const c = await new ContractFactory(abi, bytecode, deployer).deploy(...args);
    await c.waitForDeployment();
    return new Contract(await c.getAddress(), abi, deployer);
  };
  const send = async (c: Contract, fn: string, args: unknown[]): Promise<void> => {
    await (await c.getFunction(fn).send(...args)).wait();
  };
  const tm = await deploy("TransactionManager", [CHAIN_ID]);
  const token = await deploy("TestERC20", []);
  const [tmAddress, tokenAddress] = [await tm.getAddress(), await token.getAddress()];
  await send(tm, "addRouter", [router]);
  await send(tm, "addAssetId", [tokenAddress]);
  await send(token, "approve", [tmAddress, amount]);
  await send(tm, "addLiquidityFor", [amount, tokenAddress, router]);
  return { tm: tmAddress, token: tokenAddress };
}

async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function rpcBody(method: string, params: unknown[]): RequestInit {
  return { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) };
}

function binary(name: string, fallbacks: string[]): string {
  const candidates = [...(process.env.PATH ?? "").split(":").map((d) => join(d, name)), ...fallbacks];
  const found = candidates.find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (!found) throw new Error(`${name} not found on PATH`);
  return found;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  },
);

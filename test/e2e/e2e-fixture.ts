import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { MaxUint256, Wallet, parseEther } from "ethers";
import { Redis } from "ioredis";
import { startPoller, type PollerOptions, type RunningPoller } from "../../services/poller/start-poller";
import { startSubmitter, type RunningSubmitter, type SubmitterOptions } from "../../services/submitter/start-submitter";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { txQueueName, type TxJobData, type TxJobResult } from "../../shared/queues";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import type { RouterSigner } from "../../shared/signer/router-signer";
import { createTransferStore, type ChainHead } from "../../shared/transfers/transfer-store";
import { anvilWallet } from "../harness/anvil";
import { spawnRouterProcess, waitForReady, type ManagedProcess } from "../harness/child-process";
import { deployContract, fundRouterLiquidity, mintToken, nxtpContractAt, sendTx } from "../harness/deploy";
import { getFreePort } from "../harness/free-port";
import { startStackAnd, type Stack, type StackChain } from "../harness/stack";
import { waitFor } from "../harness/wait";
import { captureLogs, type LogCapture } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * One stack for the whole e2e suite (redis + anvil 1, 1337, 1338 with NXTP), and per test a running router:
 * the real process factories (startPoller / startSubmitter, as their main.ts run them) for 1337 and 1338 in
 * this process; the admin API (and, for the SIGKILL test, a poller) as real child processes (dist/services/<x>/main.js).
 * The processes share nothing but Redis, under a Redis prefix of the test's own.
 */
export const CHAIN1 = 1;
export const SENDING = 1337;
export const RECEIVING = 1338;
export const DAY = 86_400;
export const AMOUNT = parseEther("100");
export const LIQUIDITY = parseEther("100000"); // every happy path moves 99.95 TEST of it to the user for good
export const ADMIN_TOKEN = "e2e-admin-token-0123456789abcdef";
// Shortened (default 1 s) so each of the many scripted swaps here settles in about a second; the real-SDK swaps
// (sdk.test.ts, pm2-sdk.test.ts) run every process at its shipped defaults.
const POLLER_OPTIONS: PollerOptions = { intervalMs: 50, providerOptions: { headRefreshMs: 100 } };
const SUBMITTER_OPTIONS: SubmitterOptions = { pollIntervalMs: 50, providerOptions: { headRefreshMs: 100 } };

export interface E2eStack {
  readonly stack: Stack;
  readonly chain1: StackChain;
  readonly sending: StackChain;
  readonly receiving: StackChain;
  readonly redisUrl: string;
  readonly mnemonic: string;
  /** The router signer, also the router (direct mode). */
  readonly routerSigner: RouterSigner;
  readonly router: string;
  /** The swapping user: anvil account 5, holding TEST and OTHER on 1337 with both approved to the TransactionManager. */
  readonly user: Wallet;
  /** A second TestERC20 the sending TransactionManager accepts, outside every swap pool. */
  readonly otherToken: string;
  /** Config files of the child processes. */
  readonly dir: string;
}

export async function startE2eStack(): Promise<E2eStack> {
  const routerWallet = Wallet.createRandom();
  const mnemonic = routerWallet.mnemonic?.phrase;
  if (!mnemonic) throw new Error("random wallet without mnemonic");
  const stackOptions = { chainIds: [CHAIN1, SENDING, RECEIVING], nats: false, routerSigner: routerWallet.address };
  return startStackAnd(stackOptions, async (stack): Promise<E2eStack> => {
    if (!stack.redis) throw new Error("stack without redis");
    const [chain1, sending, receiving] = [stack.chain(CHAIN1), stack.chain(SENDING), stack.chain(RECEIVING)];
    const router = routerWallet.address;
    for (const chain of [sending, receiving]) {
      await chain.anvil.setBalance(router, parseEther("100"));
      const funder = anvilWallet(3, chain.provider);
      await mintToken(chain.deployment, funder.address, LIQUIDITY);
      await fundRouterLiquidity({
        deployment: chain.deployment,
        funder,
        router,
        assetId: chain.deployment.token,
        amount: LIQUIDITY,
      });
    }
    const user = anvilWallet(5, sending.provider);
    const other = await deployContract("TestERC20", anvilWallet(4, sending.provider));
    const otherToken = await other.getAddress();
    await sendTx(sending.deployment.contracts.transactionManager, "addAssetId", [otherToken]);
    for (const token of [sending.deployment.token, otherToken]) {
      await sendTx(nxtpContractAt("TestERC20", token, sending.deployer), "mint", [user.address, AMOUNT * 1000n]);
      await sendTx(nxtpContractAt("ERC20", token, user), "approve", [
        sending.deployment.transactionManager,
        MaxUint256,
      ]);
    }
    return {
      stack,
      chain1,
      sending,
      receiving,
      redisUrl: stack.redis.url,
      mnemonic,
      routerSigner: createMnemonicSigner(mnemonic),
      router,
      user,
      otherToken,
      dir: mkdtempSync(join(tmpdir(), "e2e-router-")),
    };
  });
}

export async function stopE2eStack(s: E2eStack | undefined): Promise<void> {
  await s?.stack.stop();
  if (s) rmSync(s.dir, { recursive: true, force: true });
}

export interface RouterParams {
  /** Subgraph URL per chain (the poller then reads through the subgraph while it is synced). */
  readonly subgraph?: Readonly<Record<number, string>>;
  /** Spawn the admin API (dist/services/admin/main.js); default true. */
  readonly admin?: boolean;
  /** Chains whose poller runs in this process from the start; default 1337 and 1338. */
  readonly pollers?: readonly number[];
  /** Extra chainConfig keys per chain (e.g. a priceOracleAddress). */
  readonly chainExtra?: Readonly<Record<number, Record<string, unknown>>>;
}

/** The config file every process reads (chain 1 is required by the spec; nothing runs for it). */
export function routerConfigJson(
  s: E2eStack,
  prefix: string,
  p: RouterParams & { port?: number },
): Record<string, unknown> {
  const entry = (c: StackChain): Record<string, unknown> => ({
    providers: [c.anvil.url],
    transactionManagerAddress: c.deployment.transactionManager,
    confirmations: 1,
    confirmationTimeoutMs: 60_000,
    ...(p.subgraph?.[c.chainId] ? { subgraph: [p.subgraph[c.chainId]], subgraphSyncBuffer: 5 } : {}),
    ...p.chainExtra?.[c.chainId],
  });
  return {
    adminToken: ADMIN_TOKEN,
    mnemonic: s.mnemonic,
    logLevel: "info",
    redisUrl: s.redisUrl,
    redisPrefix: prefix,
    host: "127.0.0.1",
    port: p.port ?? 8080,
    swapPools: [
      {
        name: "TEST",
        assets: [
          { chainId: SENDING, assetId: s.sending.deployment.token },
          { chainId: RECEIVING, assetId: s.receiving.deployment.token },
        ],
      },
    ],
    chainConfig: {
      [String(CHAIN1)]: entry(s.chain1),
      [String(SENDING)]: entry(s.sending),
      [String(RECEIVING)]: entry(s.receiving),
    },
  };
}

export interface Router {
  readonly config: RouterConfig;
  readonly prefix: string;
  readonly logs: LogCapture;
  readonly redis: Redis;
  /** http://127.0.0.1:port of the admin child, when started with `admin`. */
  readonly adminUrl?: string;
  /** Poller of `chainId` in this process; `startBlock` applies only when the chain has no stored cursor yet. */
  startPoller(chainId: number, startBlock?: number): Promise<void>;
  stopPoller(chainId: number): Promise<void>;
  /** Poller of `chainId` as a child process (CHAIN_ID=…, POLLER_INTERVAL_MS=50); resolves once it stored a head. */
  spawnPoller(chainId: number, startBlock?: number): Promise<ManagedProcess>;
  getHead(chainId: number): Promise<ChainHead | undefined>;
  /** Ids of every job of the chain's transaction queue, sorted. */
  jobIds(chainId: number): Promise<string[]>;
  jobData(chainId: number, jobId: string): Promise<TxJobData | undefined>;
  /** Resolves once the chain's queue has no waiting, active or delayed job. */
  idle(chainId: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startRouter(s: E2eStack, p: RouterParams = {}): Promise<Router> {
  const prefix = uniquePrefix();
  const port = p.admin === false ? undefined : await getFreePort();
  const raw = routerConfigJson(s, prefix, { ...p, port });
  const config = loadConfig(raw, {}).config;
  const configFile = join(s.dir, `${prefix}.json`);
  writeFileSync(configFile, JSON.stringify(raw));
  const logs = captureLogs();
  const url = new URL(s.redisUrl);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const redis = new Redis(connection);
  const store = createTransferStore(redis, prefix);
  const queues = new Map(
    [CHAIN1, SENDING, RECEIVING].map((id) => [
      id,
      new Queue<TxJobData, TxJobResult>(txQueueName(id), { connection, prefix }),
    ]),
  );
  const queue = (chainId: number): Queue<TxJobData, TxJobResult> =>
    queues.get(chainId) ??
    (() => {
      throw new Error(`no queue ${chainId}`);
    })();
  const pollers = new Map<number, RunningPoller>();
  const children: ManagedProcess[] = [];
  const submitters: RunningSubmitter[] = [];
  const spawn = (name: string, main: string, env: readonly string[]): ManagedProcess =>
    spawnRouterProcess({ name, main, configFile, env });

  const router: Router = {
    config,
    prefix,
    logs,
    redis,
    adminUrl: port === undefined ? undefined : `http://127.0.0.1:${port}`,
    startPoller: async (chainId, startBlock) => {
      const head = await s.stack.chain(chainId).provider.getBlockNumber();
      const poller = await startPoller({
        config,
        logger: logs.logger,
        chainId,
        options: { ...POLLER_OPTIONS, startBlock: startBlock ?? head + 1 },
      });
      pollers.set(chainId, poller);
    },
    stopPoller: async (chainId) => {
      await pollers.get(chainId)?.stop();
      pollers.delete(chainId);
    },
    spawnPoller: async (chainId, startBlock) => {
      const spawnedAtMs = Date.now();
      const start = startBlock ?? (await s.stack.chain(chainId).provider.getBlockNumber()) + 1;
      const proc = spawn(`poller-${chainId}`, "poller/main.js", [
        `CHAIN_ID=${chainId}`,
        // Shortened as POLLER_OPTIONS above.
        "POLLER_INTERVAL_MS=50",
        `POLLER_START_BLOCK=${start}`,
      ]);
      children.push(proc);
      await waitForReady(proc, async () => ((await store.getHead(chainId))?.updatedAtMs ?? 0) > spawnedAtMs, 15_000);
      return proc;
    },
    getHead: (chainId) => store.getHead(chainId),
    jobIds: async (chainId) => (await queue(chainId).getJobs()).map((j) => String(j.id)).sort(),
    jobData: async (chainId, jobId) => (await queue(chainId).getJob(jobId))?.data,
    idle: async (chainId) => {
      await waitFor(`tx-${chainId} idle`, async () => {
        const counts = await queue(chainId).getJobCounts("waiting", "active", "delayed", "prioritized");
        return Object.values(counts).every((n) => n === 0) ? true : undefined;
      });
    },
    stop: async () => {
      await Promise.all([...pollers.values()].map((poller) => poller.stop()));
      await Promise.all([...children.map((c) => c.stop()), ...submitters.map((sub) => sub.stop())]);
      for (const q of queues.values()) await q.close();
      redis.disconnect();
      if (process.env.E2E_LOG_DIR) {
        writeFileSync(
          join(process.env.E2E_LOG_DIR, `${prefix}.log`),
          logs
            .lines()
            .map((l) => JSON.stringify(l))
            .join("\n"),
        );
      }
    },
  };
  try {
    for (const chainId of [SENDING, RECEIVING]) {
      submitters.push(await startSubmitter({ config, logger: logs.logger, chainId, options: SUBMITTER_OPTIONS }));
    }
    for (const chainId of p.pollers ?? [SENDING, RECEIVING]) {
      await router.startPoller(chainId);
    }
    if (router.adminUrl) {
      const admin = spawn("admin", "admin/main.js", []);
      children.push(admin);
      await waitForReady(admin, async () => (await fetch(`${router.adminUrl}/ping`)).ok, 15_000);
    }
  } catch (err) {
    await router.stop();
    throw err;
  }
  return router;
}

export interface AdminReply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export async function postAdmin(r: Router, path: string, body: Record<string, unknown>): Promise<AdminReply> {
  const res = await fetch(`${r.adminUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Queue, Worker, type Job } from "bullmq";
import {
  HDNodeWallet,
  Wallet,
  ZeroAddress,
  getBytes,
  hexlify,
  keccak256,
  parseEther,
  randomBytes,
  type ContractTransactionReceipt,
} from "ethers";
import { Redis } from "ioredis";
import { ledgerWithDefaults, loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { encodeBid, signBid } from "../../shared/protocol/bid";
import { fulfillPayloadHash } from "../../shared/protocol/user-signatures";
import type { AuctionBid, InvariantTransactionData } from "../../shared/protocol/types";
import {
  bookTransactionJobId,
  transferKey,
  txJobId,
  txQueueName,
  type BookTransactionJobData,
  type TxJobData,
  type TxJobName,
  type TxJobResult,
} from "../../shared/queues";
import { chainHeadKey, pollerCursorKey } from "../../shared/coordination/keys";
import { DEFAULT_HEAD_REFRESH_MS } from "../../shared/chain/chain-provider";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import type { RouterSigner } from "../../shared/signer/router-signer";
import { startPoller, type PollerOptions, type RunningPoller } from "../../services/poller/start-poller";
import { anvilWallet } from "../harness/anvil";
import { deployContract, fundRouterLiquidity, mintToken, nxtpContractAt, sendTx } from "../harness/deploy";
import { spawnRouterProcess, type ManagedProcess } from "../harness/child-process";
import { startStackAnd, useStack, type Stack, type StackChain, type Suite } from "../harness/stack";
import { waitFor } from "../harness/wait";
import { captureLogs, type LogCapture } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/** Two anvil chains with NXTP, redis, and a router signer of its own (account 0 of a fresh mnemonic). */
export const SENDING = 1337;
export const RECEIVING = 1338;
export const AMOUNT = parseEther("100");
/** Shortened (default 1 s) so the poller cases see each block within a tick; the real-SDK swaps run at the defaults. */
export const FAST: PollerOptions = { intervalMs: 100, providerOptions: { headRefreshMs: 500 } };
/**
 * How late after its block a FAST poller may enqueue a transfer's job: below the shipped head refresh (3 s), so a
 * poller that ignored FAST's 500 ms refresh, or waited on anything of that order, fails. FAST's cycle (500 ms +
 * 100 ms) and a tick slowed by a loaded machine (about 0.7 s at load 10 on 2 cores) stay well inside; a 1 s bound
 * failed on that. Detection speed at the defaults is a benchmark's figure, not a test's.
 */
export const FAST_DETECTION_BOUND_MS = DEFAULT_HEAD_REFRESH_MS;

export interface PollerStack {
  readonly stack: Stack;
  readonly sending: StackChain;
  readonly receiving: StackChain;
  readonly redisUrl: string;
  readonly mnemonic: string;
  readonly routerSigner: RouterSigner;
  /** The router wallet on the receiving chain, to simulate the receiving side as the submitter would. */
  readonly routerWallet: Wallet;
  /** A second approved token on the sending chain, outside every swap pool. */
  readonly otherToken: string;
}

export async function startPollerStack(): Promise<PollerStack> {
  const mnemonic = Wallet.createRandom().mnemonic?.phrase;
  if (!mnemonic) throw new Error("random wallet without mnemonic");
  const routerSigner = createMnemonicSigner(mnemonic);
  const router = await routerSigner.getAddress();
  return startStackAnd({ chainIds: [SENDING, RECEIVING], nats: false, routerSigner: router }, async (stack) => {
    if (!stack.redis) throw new Error("stack without redis");
    const sending = stack.chain(SENDING);
    const receiving = stack.chain(RECEIVING);
    const routerWallet = new Wallet(HDNodeWallet.fromPhrase(mnemonic).privateKey, receiving.provider);
    await receiving.anvil.setBalance(router, parseEther("100"));
    const funder = anvilWallet(3, receiving.provider);
    await mintToken(receiving.deployment, funder.address, AMOUNT * 100n);
    await fundRouterLiquidity({
      deployment: receiving.deployment,
      funder,
      router,
      assetId: receiving.deployment.token,
      amount: AMOUNT * 100n,
    });
    // A second TestERC20 the TransactionManager accepts, for the "different sending asset" fraud.
    const other = await deployContract("TestERC20", anvilWallet(4, sending.provider));
    const otherToken = await other.getAddress();
    await sendTx(sending.deployment.contracts.transactionManager, "addAssetId", [otherToken]);
    const redisUrl = stack.redis.url;
    return { stack, sending, receiving, redisUrl, mnemonic, routerSigner, routerWallet, otherToken };
  });
}

export interface PollerConfigParams {
  readonly diagnosticMode?: boolean;
  readonly subgraph?: Readonly<Record<number, string>>;
  readonly subgraphSyncBuffer?: number;
  /** Default "debug"; the child processes log at "info". */
  readonly logLevel?: string;
  readonly metricsPort?: number;
}

/** The router config's JSON for the poller tests (what a child process reads from its config file). */
export function pollerConfigJson(s: PollerStack, prefix: string, p: PollerConfigParams = {}): Record<string, unknown> {
  const chain = (c: StackChain): Record<string, unknown> => ({
    providers: [c.anvil.url],
    transactionManagerAddress: c.deployment.transactionManager,
    confirmations: 1,
    ...(p.subgraph?.[c.chainId]
      ? { subgraph: [p.subgraph[c.chainId]], subgraphSyncBuffer: p.subgraphSyncBuffer ?? 5 }
      : {}),
  });
  return {
    adminToken: "integration-test-admin-token",
    mnemonic: s.mnemonic,
    logLevel: p.logLevel ?? "debug",
    redisUrl: s.redisUrl,
    redisPrefix: prefix,
    diagnosticMode: p.diagnosticMode ?? false,
    ...(p.metricsPort === undefined ? {} : { metricsPort: p.metricsPort }),
    swapPools: [
      {
        assets: [
          { chainId: SENDING, assetId: s.sending.deployment.token },
          { chainId: RECEIVING, assetId: s.receiving.deployment.token },
        ],
      },
    ],
    // Chain 1 is required by the config rules; its TransactionManager is the package's mainnet deployment.
    chainConfig: {
      "1": { providers: [s.sending.anvil.url] },
      [String(SENDING)]: chain(s.sending),
      [String(RECEIVING)]: chain(s.receiving),
    },
  };
}

export function pollerConfig(s: PollerStack, prefix: string, p: PollerConfigParams = {}): RouterConfig {
  return loadConfig(pollerConfigJson(s, prefix, p), {}).config;
}

/** The poller stack, once per suite, and per test a Redis prefix of its own, its queues and a log capture. */
export interface PollerTest {
  readonly prefix: string;
  readonly queues: Queues;
  readonly logs: LogCapture;
}

export type PollerSuite = Suite<PollerStack, PollerTest>;

export function usePollerSuite(name: string): PollerSuite {
  return useStack<PollerStack, PollerTest>({
    name,
    start: startPollerStack,
    stop: (s) => s.stack.stop(),
    eachTest: (s, suite) => {
      const prefix = uniquePrefix();
      const queues = openQueues(s.redisUrl, prefix);
      suite.afterTest(() => queues.close());
      return { prefix, queues, logs: captureLogs() };
    },
  });
}

/**
 * The suite's test's poller of `chainId` (or of several chains, CHAIN_ID=1337,1338) as a child process
 * (dist/services/poller/main.js), over a config file written for it, stopped after the test. `instance` is its PM2
 * instance (NODE_APP_INSTANCE: its metrics port).
 */
export function spawnPollerChild(
  s: PollerSuite,
  p: { chainId: number | readonly number[]; startBlock: number; instance?: number; config?: PollerConfigParams },
): ManagedProcess {
  const configFile = join(s.scratchDir, `${s.prefix}-${p.instance ?? 0}.json`);
  writeFileSync(configFile, JSON.stringify(pollerConfigJson(s, s.prefix, { logLevel: "info", ...p.config })));
  const chainIds = typeof p.chainId === "number" ? [p.chainId] : p.chainId;
  return s.stopAfterTest(
    spawnRouterProcess({
      name: `poller-${chainIds.join("+")}-${p.instance ?? 0}`,
      main: "poller/main.js",
      configFile,
      env: [
        `CHAIN_ID=${chainIds.join(",")}`,
        ...(p.instance === undefined ? [] : [`NODE_APP_INSTANCE=${p.instance}`]),
        // Shortened (default 1 s) so a resumed tick comes right after a restart or takeover; the lease TTL stays default.
        "POLLER_INTERVAL_MS=100",
        `POLLER_START_BLOCK=${p.startBlock}`,
      ],
    }),
  );
}

/** Both chains' pollers, reading from the current heads on (so earlier tests' transfers stay out). */
export async function startPollers(
  s: PollerStack,
  config: RouterConfig,
  logs: LogCapture,
  options: PollerOptions = {},
): Promise<RunningPoller[]> {
  return Promise.all(
    [s.sending, s.receiving].map(async (c) =>
      startPoller({
        config,
        logger: logs.logger,
        chainId: c.chainId,
        options: { ...FAST, startBlock: (await c.provider.getBlockNumber()) + 1, ...options },
      }),
    ),
  );
}

/** One chain's poller for the suite's current test (its log capture, FAST unless overridden), stopped after it. */
export async function startTestPoller(
  s: PollerSuite,
  p: { config: RouterConfig; chainId: number; options?: PollerOptions; logs?: LogCapture },
): Promise<RunningPoller> {
  const logger = (p.logs ?? s.logs).logger;
  return s.stopAfterTest(
    await startPoller({ config: p.config, logger, chainId: p.chainId, options: { ...FAST, ...p.options } }),
  );
}

/** Both chains' pollers (startPollers) for the suite's current test, stopped after it. */
export async function startTestPollers(
  s: PollerSuite,
  config: RouterConfig,
  options: PollerOptions = {},
): Promise<RunningPoller[]> {
  return (await startPollers(s, config, s.logs, options)).map((poller) => s.stopAfterTest(poller));
}

export interface Tamper {
  readonly sendingAssetId?: string;
  readonly receivingChainId?: number;
  readonly receivingAddress?: string;
  readonly amount?: bigint;
}

export interface UserPrepareParams {
  /** Anvil account index of the user. */
  readonly user: number;
  readonly bid?: Partial<AuctionBid>;
  /** What the user puts on chain instead of what the bid says. */
  readonly tamper?: Tamper;
  readonly bidSigner?: RouterSigner;
}

export interface UserPrepared {
  readonly transactionId: string;
  readonly user: string;
  /** Anvil account index of the user. */
  readonly userIndex: number;
  readonly bid: AuctionBid;
  readonly encodedBid: string;
  readonly bidSignature: string;
  readonly invariant: InvariantTransactionData;
  readonly lockedAmount: bigint;
  readonly receipt: ContractTransactionReceipt;
  /** Wall clock right after the receipt came back. */
  readonly minedAtMs: number;
  readonly transferKey: string;
}

/**
 * What an NXTP user does on the sending chain: a bid signed by the router's key (as the auction would have
 * answered), then approve and TransactionManager.prepare, with expiry = block time + 3 d 3 h like the SDK.
 */
export async function userPrepare(s: PollerStack, p: UserPrepareParams): Promise<UserPrepared> {
  const wallet = anvilWallet(p.user, s.sending.provider);
  const latest = await s.sending.provider.getBlock("latest");
  if (!latest) throw new Error("no latest block");
  const router = await s.routerSigner.getAddress();
  const transactionId = hexlify(randomBytes(32));
  const bid: AuctionBid = {
    user: wallet.address,
    router,
    initiator: wallet.address,
    sendingChainId: SENDING,
    sendingAssetId: s.sending.deployment.token,
    amount: AMOUNT.toString(),
    receivingChainId: RECEIVING,
    receivingAssetId: s.receiving.deployment.token,
    amountReceived: ((AMOUNT * 9995n) / 10000n).toString(),
    receivingAddress: wallet.address,
    transactionId,
    expiry: latest.timestamp + 3 * 86400 + 3 * 3600,
    callDataHash: keccak256("0x"),
    callTo: ZeroAddress,
    encryptedCallData: "0x",
    sendingChainTxManagerAddress: s.sending.deployment.transactionManager,
    receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
    bidExpiry: latest.timestamp + 300,
    ...p.bid,
  };
  const encodedBid = encodeBid(bid);
  const bidSignature = await signBid(p.bidSigner ?? s.routerSigner, bid);
  const invariant: InvariantTransactionData = {
    receivingChainTxManagerAddress: bid.receivingChainTxManagerAddress,
    user: wallet.address,
    router,
    initiator: wallet.address,
    sendingAssetId: p.tamper?.sendingAssetId ?? bid.sendingAssetId,
    receivingAssetId: bid.receivingAssetId,
    sendingChainFallback: wallet.address,
    callTo: bid.callTo,
    receivingAddress: p.tamper?.receivingAddress ?? bid.receivingAddress,
    sendingChainId: SENDING,
    receivingChainId: p.tamper?.receivingChainId ?? bid.receivingChainId,
    callDataHash: bid.callDataHash,
    transactionId,
  };
  const lockedAmount = p.tamper?.amount ?? AMOUNT;
  const token = nxtpContractAt("TestERC20", invariant.sendingAssetId, s.sending.deployer);
  await sendTx(token, "mint", [wallet.address, lockedAmount]);
  await sendTx(nxtpContractAt("ERC20", invariant.sendingAssetId, wallet), "approve", [
    s.sending.deployment.transactionManager,
    lockedAmount,
  ]);
  const tm = nxtpContractAt("TransactionManager", s.sending.deployment.transactionManager, wallet);
  const receipt = await sendTx(tm, "prepare", [
    {
      invariantData: invariant,
      amount: lockedAmount,
      expiry: bid.expiry,
      encryptedCallData: "0x",
      encodedBid,
      bidSignature,
      encodedMeta: "0x",
    },
  ]);
  return {
    transactionId,
    user: wallet.address,
    userIndex: p.user,
    bid,
    encodedBid,
    bidSignature,
    invariant,
    lockedAmount,
    receipt,
    minedAtMs: Date.now(),
    transferKey: transferKey(transactionId, wallet.address),
  };
}

/** The receiving-side prepare as the router's submitter would send it (the colleague's operation, simulated). */
export async function routerPrepareReceiver(
  s: PollerStack,
  prepared: UserPrepared,
): Promise<ContractTransactionReceipt> {
  const tm = nxtpContractAt("TransactionManager", s.receiving.deployment.transactionManager, s.routerWallet);
  return sendTx(tm, "prepare", [
    {
      invariantData: prepared.invariant,
      amount: BigInt(prepared.bid.amountReceived),
      expiry: prepared.bid.expiry - 86400,
      encryptedCallData: "0x",
      encodedBid: prepared.encodedBid,
      bidSignature: prepared.bidSignature,
      encodedMeta: "0x",
    },
  ]);
}

export interface UserFulfilled {
  /** The user's signature over the fulfill payload: what the router's claim of the sending side carries. */
  readonly signature: string;
  readonly receipt: ContractTransactionReceipt;
}

/** The user's fulfill of the receiving side the router prepared (in `receiverPrepare`), relayer fee 0. */
export async function userFulfill(
  s: PollerStack,
  p: UserPrepared,
  receiverPrepare: ContractTransactionReceipt,
): Promise<UserFulfilled> {
  const user = anvilWallet(p.userIndex, s.receiving.provider);
  const payload = {
    transactionId: p.transactionId,
    relayerFee: "0",
    receivingChainId: RECEIVING,
    receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
  };
  const signature = await user.signMessage(getBytes(fulfillPayloadHash(payload)));
  const txData = {
    ...p.invariant,
    amount: p.bid.amountReceived,
    expiry: p.bid.expiry - 86400,
    preparedBlockNumber: receiverPrepare.blockNumber,
  };
  const tm = nxtpContractAt("TransactionManager", s.receiving.deployment.transactionManager, user);
  const receipt = await sendTx(tm, "fulfill", [
    { txData, relayerFee: 0, signature, callData: "0x", encodedMeta: "0x" },
  ]);
  return { signature, receipt };
}

/** Producer-side view of both chains' transaction queues under the test's prefix. */
export interface Queues {
  readonly redis: Redis;
  job(chainId: number, name: TxJobName, key: string): Promise<Job<TxJobData, TxJobResult> | undefined>;
  /** Adds a job under the deterministic id, as if a poller had (placeholder data: no submitter runs). */
  add(chainId: number, name: TxJobName, key: string, opts: { attempts: number }): Promise<void>;
  /** Runs a worker on the chain's queue that fails every waiting job with `error(jobId)`, until all failed. */
  failAll(chainId: number, error: (jobId: string) => Error): Promise<void>;
  count(chainId: number): Promise<number>;
  close(): Promise<void>;
}

export function openQueues(
  redisUrl: string,
  prefix: string,
  chainIds: readonly number[] = [1, SENDING, RECEIVING],
): Queues {
  const url = new URL(redisUrl);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const queues = new Map(
    chainIds.map((id) => [id, new Queue<TxJobData, TxJobResult>(txQueueName(id), { connection, prefix })]),
  );
  const queue = (chainId: number): Queue<TxJobData, TxJobResult> => {
    const q = queues.get(chainId);
    if (!q) throw new Error(`no queue for ${chainId}`);
    return q;
  };
  const redis = new Redis(connection);
  return {
    redis,
    job: (chainId, name, key) => queue(chainId).getJob(txJobId(name, key)),
    add: async (chainId, name, key, opts) => {
      await queue(chainId).add(name, { chainId } as TxJobData, { jobId: txJobId(name, key), attempts: opts.attempts });
    },
    failAll: async (chainId, error) => {
      const worker = new Worker(txQueueName(chainId), async (job) => Promise.reject(error(job.id ?? "")), {
        connection,
        prefix,
      });
      const q = queue(chainId);
      const pending = async (): Promise<number> =>
        Object.values(await q.getJobCounts("wait", "active", "delayed")).reduce((a, b) => a + b, 0);
      await waitFor(`every job of chain ${chainId} failed`, async () => (await pending()) === 0, 10_000, 50).finally(
        () => worker.close(),
      );
    },
    count: async (chainId) => {
      const counts = await queue(chainId).getJobCounts();
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },
    close: async () => {
      for (const q of queues.values()) {
        await q.obliterate({ force: true }).catch(() => undefined);
        await q.close();
      }
      redis.disconnect();
    },
  };
}

export function enqueueLines(logs: LogCapture, key?: string): Array<Record<string, unknown>> {
  return logs.lines().filter((l) => l.at === "poller.enqueue" && (key === undefined || l.transferKey === key));
}

/**
 * The "job enqueued" lines of `key` once there is one. The poller logs the line after the job's add returned, so a
 * test that already saw the job in Redis can be ahead of its line (a loaded machine delays the poller between the
 * two): wait for the line, then judge the lines.
 */
export function enqueueLogged(
  logs: LogCapture,
  key: string,
  timeoutMs = 10_000,
): Promise<Array<Record<string, unknown>>> {
  return waitFor(
    `the enqueue log line of ${key}`,
    () => {
      const lines = enqueueLines(logs, key);
      return lines.length > 0 ? lines : undefined;
    },
    timeoutMs,
  );
}

export interface StoredCursor {
  readonly block: number;
  readonly updatedAtMs: number;
}

/**
 * A log cursor at `block` as the logs source stores it, without a hash (so nothing is verified against the chain):
 * written under pollerCursorKey, it makes a poller skip the blocks up to `block`, as if eth_getLogs had answered
 * them empty.
 */
export function cursorAt(block: number): string {
  return JSON.stringify({ block, checkpoints: [{ block }], updatedAtMs: Date.now() });
}

/** The chain's log cursor as the suite's current test's pollers stored it. */
export async function storedCursor(s: PollerSuite, chainId: number): Promise<StoredCursor | undefined> {
  const raw = await s.queues.redis.get(pollerCursorKey(s.prefix, chainId));
  return raw === null ? undefined : (JSON.parse(raw) as StoredCursor);
}

/**
 * Mines a block and waits until the chain's poller (under `prefix`) stored a head at it. A tick stores its head
 * before it decides, so once this resolves every tick that began before the call has completed, decisions and
 * enqueues included: what such a tick would have done is visible now.
 */
export async function nextTick(s: PollerSuite, chainId: number, prefix = s.prefix): Promise<void> {
  const chain = s.stack.chain(chainId);
  await chain.anvil.mine(1);
  await syncedPast(s.queues, prefix, chainId, await chain.provider.getBlockNumber());
}

/** Resolves once this chain's poller stored a head at or past `block` (its records are complete to there). */
export async function syncedPast(queues: Queues, prefix: string, chainId: number, block: number): Promise<void> {
  await waitFor(
    `chain ${chainId} synced past ${block}`,
    async () => {
      const json = await queues.redis.get(chainHeadKey(prefix, chainId));
      const head = json === null ? undefined : (JSON.parse(json) as { syncedBlock?: number });
      return (head?.syncedBlock ?? -1) >= block;
    },
    20_000,
    50,
  );
}

/** The config as loaded, plus a `ledger` section: the naming on, with no ledger process draining the queue. */
export function ledgerConfig(s: PollerStack, prefix: string, p: PollerConfigParams = {}): RouterConfig {
  return {
    ...pollerConfig(s, prefix, p),
    ledger: ledgerWithDefaults({ databaseUrl: "postgres://ledger.invalid/ledger" }),
  };
}

/** The ledger queue's jobs under `prefix` (no ledger process runs: they wait), each under its deterministic id. */
export async function ledgerJobsOf(queue: Queue<BookTransactionJobData>): Promise<BookTransactionJobData[]> {
  const jobs = await queue.getJobs(["waiting", "prioritized", "delayed", "active", "completed", "failed"]);
  for (const job of jobs) {
    if (job.id !== bookTransactionJobId(job.data.chainId, job.data.hash)) {
      throw new Error(`ledger job ${job.id} is not under its deterministic id`);
    }
  }
  return jobs.map((j) => j.data).sort((a, b) => `${a.chainId}${a.hash}`.localeCompare(`${b.chainId}${b.hash}`));
}

import { randomUUID } from "node:crypto";
import { Queue, QueueEvents, type Job } from "bullmq";
import { Redis } from "ioredis";
import { Wallet, ZeroAddress, keccak256, parseEther } from "ethers";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import {
  TX_JOB,
  TX_JOB_DEFAULTS,
  txJobId,
  txQueueName,
  type RemoveLiquidityJobData,
  type TxJobData,
  type TxJobResult,
} from "../../shared/queues";
import { createTxRecordStore, newTxRecord, type TxRecord } from "../../services/submitter/send/tx-record";
import { txRecordKey } from "../../shared/coordination/keys";
import { anvilWallet } from "../harness/anvil";
import { fundRouterLiquidity, mintToken, readBigInt } from "../harness/deploy";
import { startStackAnd, type Stack, type StackChain } from "../harness/stack";

/** Shared set-up of the submitter tests: one anvil + NXTP + redis, and a router signer of its own. */
export const CHAIN_ID = 1337;
export const TOKEN_LIQUIDITY = parseEther("1000");
export const NATIVE_LIQUIDITY = parseEther("10");

export interface SubmitterStack {
  readonly stack: Stack;
  readonly chain: StackChain;
  readonly redisUrl: string;
  /** A fresh mnemonic per run: account 0 is the router signer, so nonces start at 0 and nothing else uses it. */
  readonly mnemonic: string;
  readonly signer: string;
  /** Recipient the Router contract pays in router-contract mode. */
  readonly routerRecipient: string;
}

export async function startSubmitterStack(): Promise<SubmitterStack> {
  const wallet = Wallet.createRandom();
  const mnemonic = wallet.mnemonic?.phrase;
  if (!mnemonic) throw new Error("random wallet without mnemonic");
  const routerRecipient = Wallet.createRandom().address;
  const stackOptions = {
    chainIds: [CHAIN_ID],
    nats: false,
    routerSigner: wallet.address,
    withRouterContract: { recipient: routerRecipient },
  };
  return startStackAnd(stackOptions, async (stack): Promise<SubmitterStack> => {
    const chain = stack.chain(CHAIN_ID);
    if (!stack.redis || !chain.deployment.routerContract) throw new Error("stack without redis or router contract");
    await chain.anvil.setBalance(wallet.address, parseEther("100"));
    const funder = anvilWallet(3, chain.provider);
    for (const router of [wallet.address, chain.deployment.routerContract]) {
      await mintToken(chain.deployment, funder.address, TOKEN_LIQUIDITY);
      await fundRouterLiquidity({
        deployment: chain.deployment,
        funder,
        router,
        assetId: chain.deployment.token,
        amount: TOKEN_LIQUIDITY,
      });
      await fundRouterLiquidity({
        deployment: chain.deployment,
        funder,
        router,
        assetId: ZeroAddress,
        amount: NATIVE_LIQUIDITY,
      });
    }
    return { stack, chain, redisUrl: stack.redis.url, mnemonic, signer: wallet.address, routerRecipient };
  });
}

export interface ConfigParams {
  readonly routerContract?: boolean;
  readonly confirmationTimeoutMs?: number;
  readonly confirmations?: number;
  /** The chain's provider URLs; the anvil node alone by default. */
  readonly providers?: readonly string[];
}

/** The config file's JSON (also written to disk for the child-process test) and its loaded form. */
export function submitterConfig(
  s: SubmitterStack,
  prefix: string,
  p: ConfigParams = {},
): { raw: Record<string, unknown>; config: RouterConfig } {
  const tm = s.chain.deployment.transactionManager;
  const raw: Record<string, unknown> = {
    adminToken: "integration-test-admin-token",
    mnemonic: s.mnemonic,
    logLevel: "debug",
    redisUrl: s.redisUrl,
    redisPrefix: prefix,
    swapPools: [],
    chainConfig: {
      // Required by the config rules; this submitter never talks to chain 1.
      "1": { providers: [s.chain.anvil.url] },
      [String(CHAIN_ID)]: {
        providers: p.providers ?? [s.chain.anvil.url],
        transactionManagerAddress: tm,
        confirmations: p.confirmations ?? 1,
        confirmationTimeoutMs: p.confirmationTimeoutMs ?? 60_000,
      },
    },
    ...(p.routerContract ? { routerContractAddress: s.chain.deployment.routerContract } : {}),
  };
  return { raw, config: loadConfig(raw, {}).config };
}

/** Producer side of one chain's tx queue, with the progress events it saw. */
export interface TxQueueClient {
  readonly queue: Queue<TxJobData, TxJobResult>;
  readonly events: QueueEvents;
  readonly progress: Map<string, unknown[]>;
  /** Plain connection to the same Redis, for the router's own keys. */
  readonly redis: Redis;
  addRemoveLiquidity(data: Omit<RemoveLiquidityJobData, "chainId" | "requestId">): Promise<Job<TxJobData, TxJobResult>>;
  record(jobId: string): Promise<TxRecord | undefined>;
  close(): Promise<void>;
}

export async function txQueueClient(redisUrl: string, prefix: string): Promise<TxQueueClient> {
  const url = new URL(redisUrl);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const queue = new Queue<TxJobData, TxJobResult>(txQueueName(CHAIN_ID), { connection, prefix });
  const events = new QueueEvents(txQueueName(CHAIN_ID), { connection, prefix });
  const redis = new Redis(connection);
  // Tests wait on many jobs at once; each waitUntilFinished adds listeners.
  queue.setMaxListeners(200);
  events.setMaxListeners(200);
  const progress = new Map<string, unknown[]>();
  events.on("progress", ({ jobId, data }) => progress.set(jobId, [...(progress.get(jobId) ?? []), data]));
  await events.waitUntilReady();
  return {
    queue,
    events,
    progress,
    redis,
    addRemoveLiquidity: (data) => {
      const requestId = randomUUID();
      return queue.add(
        TX_JOB.removeLiquidity,
        { ...data, chainId: CHAIN_ID, requestId },
        { ...TX_JOB_DEFAULTS, jobId: txJobId(TX_JOB.removeLiquidity, requestId) },
      );
    },
    record: async (jobId) => {
      const json = await redis.hget(txRecordKey(prefix, CHAIN_ID, jobId), "record");
      return json === null ? undefined : (JSON.parse(json) as TxRecord);
    },
    close: async () => {
      await events.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      redis.disconnect();
    },
  };
}

/**
 * A job that signed and persisted its transaction at `nonce` (1 wei to the router's recipient), then stopped before
 * any node had it: its send record, as the submitter writes it. Returns the transaction's hash.
 */
export async function storeUnsentTransaction(
  s: SubmitterStack,
  p: { redis: Redis; prefix: string; jobId: string; nonce: number },
): Promise<string> {
  const raw = await Wallet.fromPhrase(s.mnemonic).signTransaction({
    chainId: CHAIN_ID,
    nonce: p.nonce,
    to: s.routerRecipient,
    value: 1n,
    gasLimit: 21_000n,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
    type: 2,
  });
  const hash = keccak256(raw);
  const draft = newTxRecord({
    jobId: p.jobId,
    jobName: TX_JOB.removeLiquidity,
    chainId: CHAIN_ID,
    from: s.signer,
    dataHash: "h",
    call: { to: s.routerRecipient, data: "0x", value: "1", gasLimit: "21000" },
  });
  await createTxRecordStore({ redis: p.redis, prefix: p.prefix, chainId: CHAIN_ID }).save({
    ...draft,
    nonce: p.nonce,
    attempts: [
      {
        hash,
        raw,
        nonce: p.nonce,
        gasLimit: "21000",
        sentAtMs: Date.now(),
        fee: { type: 2, maxFeePerGas: "10000000000", maxPriorityFeePerGas: "1000000000" },
      },
    ],
  });
  return hash;
}

export function routerBalance(s: SubmitterStack, router: string, assetId: string): Promise<bigint> {
  return readBigInt(s.chain.deployment.contracts.transactionManager, "routerBalances", [router, assetId]);
}

export function tokenBalance(s: SubmitterStack, owner: string): Promise<bigint> {
  return readBigInt(s.chain.deployment.contracts.token, "balanceOf", [owner]);
}

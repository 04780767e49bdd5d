import { randomBytes } from "node:crypto";
import { Queue, QueueEvents, type Job } from "bullmq";
import {
  AbiCoder,
  HDNodeWallet,
  Wallet,
  ZeroAddress,
  ZeroHash,
  hexlify,
  keccak256,
  parseEther,
  toBeHex,
  type JsonRpcProvider,
} from "ethers";
import { Redis } from "ioredis";
import { startSubmitter, type RunningSubmitter, type SubmitterOptions } from "../../services/submitter/start-submitter";
import { readVariantTransactionData } from "../../shared/chain/router-balances";
import { decodeTmLog, type PreparedEvent } from "../../shared/chain/tm-log-decoder";
import { ledgerWithDefaults, loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { encodeBid, signBid } from "../../shared/protocol/bid";
import { invariantDigest, invariantOf } from "../../shared/protocol/digests";
import { abiFulfillArgs, abiPrepareArgs } from "../../shared/protocol/router-signatures";
import type { AuctionBid, TransactionData } from "../../shared/protocol/types";
import { signFulfill } from "../../shared/protocol/user-signatures";
import {
  TX_JOB_DEFAULTS,
  transferKey,
  txJobId,
  txQueueName,
  type SenderPrepareData,
  type TxJobData,
  type TxJobDataByName,
  type TxJobName,
  type TxJobResult,
} from "../../shared/queues";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import type { RouterSigner } from "../../shared/signer/router-signer";
import { fundRouterLiquidity, mintToken, nxtpContractAt, readBigInt, sendTx } from "../harness/deploy";
import { anvilWallet } from "../harness/anvil";
import { startStackAnd, type Stack, type StackChain } from "../harness/stack";
import { captureLogs, type LogCapture } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/** Two anvil chains with NXTP, a redis-server, a router signer of its own, and a user who swaps between them. */
export const SENDING = 1337;
export const RECEIVING = 1338;
export const LIQUIDITY = parseEther("1000");
export const DAY = 86_400;
/** What the SDK uses for the sending expiry (docs/protocol.md#expiry). */
export const EXPIRY_OFFSET_SEC = 3 * DAY + 3 * 3600;
/** Shortened polls (default 1 s): each lifecycle case waits on several receipts; the real-SDK swaps run at the defaults. */
export const FAST: SubmitterOptions = { pollIntervalMs: 50, providerOptions: { headRefreshMs: 200 } };

export type RouterMode = "direct" | "router-contract";

export interface LifecycleStack {
  readonly stack: Stack;
  readonly sending: StackChain;
  readonly receiving: StackChain;
  readonly redisUrl: string;
  readonly mnemonic: string;
  /** The router signer (mnemonic account 0). */
  readonly signer: RouterSigner;
  readonly signerAddress: string;
  readonly routerContract: string;
  /** The swapping user: its own key, funded with gas on both chains and tokens on the sending chain. */
  readonly user: HDNodeWallet;
  readonly userSigner: RouterSigner;
}

export async function startLifecycleStack(): Promise<LifecycleStack> {
  const routerWallet = Wallet.createRandom();
  const userWallet = Wallet.createRandom();
  const mnemonic = routerWallet.mnemonic?.phrase;
  const userMnemonic = userWallet.mnemonic?.phrase;
  if (!mnemonic || !userMnemonic) throw new Error("random wallet without mnemonic");
  const stackOptions = {
    chainIds: [SENDING, RECEIVING],
    nats: false,
    routerSigner: routerWallet.address,
    withRouterContract: { recipient: Wallet.createRandom().address },
  };
  return startStackAnd(stackOptions, async (stack): Promise<LifecycleStack> => {
    const sending = stack.chain(SENDING);
    const receiving = stack.chain(RECEIVING);
    const routerContract = receiving.deployment.routerContract;
    if (!stack.redis || !routerContract || sending.deployment.routerContract !== routerContract) {
      throw new Error("stack without redis, or Router contracts at different addresses");
    }
    for (const chain of [sending, receiving]) {
      await chain.anvil.setBalance(routerWallet.address, parseEther("100"));
      await chain.anvil.setBalance(userWallet.address, parseEther("100"));
    }
    const funder = anvilWallet(3, receiving.provider);
    for (const router of [routerWallet.address, routerContract]) {
      await mintToken(receiving.deployment, funder.address, LIQUIDITY);
      await fundRouterLiquidity({
        deployment: receiving.deployment,
        funder,
        router,
        assetId: receiving.deployment.token,
        amount: LIQUIDITY,
      });
    }
    await mintToken(sending.deployment, userWallet.address, parseEther("100000"));
    const userOnSending = userWallet.connect(sending.provider);
    await sendTx(nxtpContractAt("ERC20", sending.deployment.token, userOnSending), "approve", [
      sending.deployment.transactionManager,
      parseEther("100000"),
    ]);
    return {
      stack,
      sending,
      receiving,
      redisUrl: stack.redis.url,
      mnemonic,
      signer: createMnemonicSigner(mnemonic),
      signerAddress: routerWallet.address,
      routerContract,
      user: HDNodeWallet.fromPhrase(userMnemonic),
      userSigner: createMnemonicSigner(userMnemonic),
    };
  });
}

export function routerOf(s: LifecycleStack, mode: RouterMode): string {
  return mode === "router-contract" ? s.routerContract : s.signerAddress;
}

/** Config of every process for one test (its own Redis prefix); chain 1 is required by the config rules, never used. */
export function lifecycleConfig(
  s: LifecycleStack,
  prefix: string,
  mode: RouterMode,
  confirmations: { readonly sending?: number; readonly receiving?: number } = {},
): RouterConfig {
  const chainEntry = (c: StackChain): Record<string, unknown> => ({
    providers: [c.anvil.url],
    transactionManagerAddress: c.deployment.transactionManager,
    confirmations: (c.chainId === SENDING ? confirmations.sending : confirmations.receiving) ?? 1,
    confirmationTimeoutMs: 60_000,
  });
  const raw: Record<string, unknown> = {
    adminToken: "lifecycle-test-admin-token-0123456789",
    mnemonic: s.mnemonic,
    logLevel: "debug",
    redisUrl: s.redisUrl,
    redisPrefix: prefix,
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
      "1": { providers: [s.sending.anvil.url] },
      [String(SENDING)]: chainEntry(s.sending),
      [String(RECEIVING)]: chainEntry(s.receiving),
    },
    ...(mode === "router-contract" ? { routerContractAddress: s.routerContract } : {}),
  };
  return loadConfig(raw, {}).config;
}

export interface Transfer {
  readonly bid: AuctionBid;
  /** The sending side as the chain stored it (from its TransactionPrepared event). */
  readonly txData: TransactionData;
  readonly sender: SenderPrepareData;
  readonly fallback: string;
}

export interface MakeTransferParams {
  readonly mode: RouterMode;
  readonly amount?: bigint;
  /** What the bid promises on the receiving chain, in its base units; default amount × 0.9995 (same decimals). */
  readonly amountReceived?: bigint;
  /** Signs the bid instead of the router signer (a forged bid). */
  readonly bidSigner?: RouterSigner;
}

/** The user's side of a swap: a bid signed by the router's key, then TransactionManager.prepare on the sending chain. */
export async function makeTransfer(s: LifecycleStack, p: MakeTransferParams): Promise<Transfer> {
  const amount = p.amount ?? parseEther("10");
  const nowSec = await latestTimestamp(s.sending.provider);
  const fallback = Wallet.createRandom().address;
  const bid: AuctionBid = {
    user: s.user.address,
    router: routerOf(s, p.mode),
    initiator: s.user.address,
    sendingChainId: SENDING,
    sendingAssetId: s.sending.deployment.token,
    amount: amount.toString(),
    receivingChainId: RECEIVING,
    receivingAssetId: s.receiving.deployment.token,
    amountReceived: (p.amountReceived ?? (amount * 9995n) / 10000n).toString(),
    receivingAddress: s.user.address,
    transactionId: hexlify(randomBytes(32)),
    expiry: nowSec + EXPIRY_OFFSET_SEC,
    callDataHash: keccak256("0x"),
    callTo: ZeroAddress,
    encryptedCallData: "0x",
    sendingChainTxManagerAddress: s.sending.deployment.transactionManager,
    receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
    bidExpiry: nowSec + 300,
  };
  const bidSignature = await signBid(p.bidSigner ?? s.signer, bid);
  const encodedBid = encodeBid(bid);
  const invariantData = { ...bid, sendingChainFallback: fallback };
  const tm = nxtpContractAt(
    "TransactionManager",
    s.sending.deployment.transactionManager,
    s.user.connect(s.sending.provider),
  );
  const args = abiPrepareArgs({
    invariantData,
    amount,
    expiry: bid.expiry,
    encryptedCallData: "0x",
    encodedBid,
    bidSignature,
    encodedMeta: "0x",
  });
  const receipt = await sendTx(tm, "prepare", [args]);
  const event = preparedEventIn(receipt.logs, s.sending.deployment.transactionManager);
  const block = await s.sending.provider.getBlock(receipt.blockNumber);
  return {
    bid,
    txData: event.txData,
    fallback,
    sender: {
      chainId: SENDING,
      txData: event.txData,
      encryptedCallData: "0x",
      encodedBid,
      bidSignature,
      prepareTransactionHash: receipt.hash,
      preparedTimestamp: block?.timestamp,
    },
  };
}

export function preparedEventIn(
  logs: ReadonlyArray<{
    address: string;
    topics: readonly string[];
    data: string;
    blockNumber: number;
    transactionHash: string;
    index: number;
  }>,
  tm: string,
): PreparedEvent {
  for (const log of logs) {
    if (log.address.toLowerCase() !== tm.toLowerCase()) continue;
    const event = decodeTmLog(log);
    if (event?.kind === "prepared") return event;
  }
  throw new Error("no TransactionPrepared event in the receipt");
}

/** The receiving side the router prepared, read from the prepare-receiver job's transaction. */
export async function receiverTxData(s: LifecycleStack, result: TxJobResult): Promise<TransactionData> {
  const receipt = await s.receiving.provider.getTransactionReceipt(result.transactionHash);
  if (!receipt) throw new Error("no receipt for the receiving prepare");
  return preparedEventIn(receipt.logs, s.receiving.deployment.transactionManager).txData;
}

/** The user's fulfill on the receiving chain, signed and sent by the user; returns the signature. */
export async function userFulfill(
  s: LifecycleStack,
  receiver: TransactionData,
): Promise<{ signature: string; transactionHash: string }> {
  const signature = await signFulfill(s.userSigner, {
    transactionId: receiver.transactionId,
    relayerFee: "0",
    receivingChainId: RECEIVING,
    receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
  });
  const tm = nxtpContractAt(
    "TransactionManager",
    s.receiving.deployment.transactionManager,
    s.user.connect(s.receiving.provider),
  );
  const receipt = await sendTx(tm, "fulfill", [
    abiFulfillArgs({ txData: receiver, relayerFee: "0", signature, callData: "0x", encodedMeta: "0x" }),
  ]);
  return { signature, transactionHash: receipt.hash };
}

export async function latestTimestamp(provider: JsonRpcProvider): Promise<number> {
  const block = await provider.getBlock("latest");
  if (!block) throw new Error("no latest block");
  return block.timestamp;
}

/** Moves both chains' clocks forward together (the router compares expiries across chains) and mines a block on each. */
export async function increaseTime(s: LifecycleStack, seconds: number): Promise<void> {
  for (const chain of [s.sending, s.receiving]) {
    await chain.anvil.increaseTime(seconds);
    await chain.anvil.mine(1);
  }
}

export function variantOf(chain: StackChain, txData: TransactionData): Promise<string> {
  return readVariantTransactionData(
    chain.provider,
    chain.deployment.transactionManager,
    invariantDigest(invariantOf(txData)),
  );
}

export function routerBalance(chain: StackChain, router: string): Promise<bigint> {
  return readBigInt(chain.deployment.contracts.transactionManager, "routerBalances", [router, chain.deployment.token]);
}

/**
 * Sets the router's liquidity on `chain` to zero in the TransactionManager's storage (routerBalances[router][token],
 * its mapping slot found by probing); returns what puts it back.
 */
export async function drainRouterLiquidity(chain: StackChain, router: string): Promise<() => Promise<void>> {
  const balance = await routerBalance(chain, router);
  const tm = chain.deployment.transactionManager;
  const coder = AbiCoder.defaultAbiCoder();
  for (let mappingSlot = 0; mappingSlot < 64; mappingSlot += 1) {
    const inner = keccak256(coder.encode(["address", "uint256"], [router, mappingSlot]));
    const slot = keccak256(coder.encode(["address", "bytes32"], [chain.deployment.token, inner]));
    if (BigInt(await chain.provider.getStorage(tm, slot)) === balance) {
      await chain.anvil.rpc("anvil_setStorageAt", [tm, slot, ZeroHash]);
      return async () => {
        await chain.anvil.rpc("anvil_setStorageAt", [tm, slot, toBeHex(balance, 32)]);
      };
    }
  }
  throw new Error("routerBalances slot not found");
}

export function tokenBalance(chain: StackChain, owner: string): Promise<bigint> {
  return readBigInt(chain.deployment.contracts.token, "balanceOf", [owner]);
}

export function pendingNonce(s: LifecycleStack, chain: StackChain): Promise<number> {
  return chain.provider.getTransactionCount(s.signerAddress, "pending");
}

/** Producer side of both chains' tx queues for one test prefix, plus the two in-process submitters. */
export interface LifecycleRun {
  readonly config: RouterConfig;
  readonly prefix: string;
  readonly logs: LogCapture;
  readonly queues: ReadonlyMap<number, Queue<TxJobData, TxJobResult>>;
  readonly events: ReadonlyMap<number, QueueEvents>;
  readonly redis: Redis;
  add<N extends TxJobName>(
    chainId: number,
    name: N,
    data: TxJobDataByName[N],
    businessKey: string,
  ): Promise<Job<TxJobData, TxJobResult>>;
  finish(job: Job<TxJobData, TxJobResult>, timeoutMs?: number): Promise<TxJobResult>;
  stop(): Promise<void>;
}

export async function startRun(
  s: LifecycleStack,
  mode: RouterMode,
  opts: {
    submitters?: boolean;
    sendingConfirmations?: number;
    receivingConfirmations?: number;
    /** Adds a `ledger` section to the config: the submitters name their mined transactions to the ledger queue. */
    ledger?: boolean;
    /** Added to FAST for both submitters (a ledger producer of the test's own, crash hooks). */
    submitterOptions?: SubmitterOptions;
  } = {},
): Promise<LifecycleRun> {
  const prefix = uniquePrefix();
  const loaded = lifecycleConfig(s, prefix, mode, {
    sending: opts.sendingConfirmations,
    receiving: opts.receivingConfirmations,
  });
  // A ledger section turns the naming on; no ledger process drains the queue here.
  const config: RouterConfig = opts.ledger
    ? { ...loaded, ledger: ledgerWithDefaults({ databaseUrl: "postgres://ledger.invalid/ledger" }) }
    : loaded;
  const logs = captureLogs();
  const url = new URL(s.redisUrl);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const queues = new Map<number, Queue<TxJobData, TxJobResult>>();
  const events = new Map<number, QueueEvents>();
  for (const chainId of [SENDING, RECEIVING]) {
    const queue = new Queue<TxJobData, TxJobResult>(txQueueName(chainId), { connection, prefix });
    const queueEvents = new QueueEvents(txQueueName(chainId), { connection, prefix });
    queueEvents.setMaxListeners(100);
    await queueEvents.waitUntilReady();
    queues.set(chainId, queue);
    events.set(chainId, queueEvents);
  }
  const submitters: RunningSubmitter[] = [];
  if (opts.submitters !== false) {
    for (const chainId of [SENDING, RECEIVING]) {
      submitters.push(
        await startSubmitter({
          config,
          logger: logs.logger,
          chainId,
          options: { ...FAST, ...opts.submitterOptions },
        }),
      );
    }
  }
  const redis = new Redis(connection);
  const queueOf = <T>(map: ReadonlyMap<number, T>, chainId: number): T => {
    const found = map.get(chainId);
    if (!found) throw new Error(`no queue for ${chainId}`);
    return found;
  };
  return {
    config,
    prefix,
    logs,
    queues,
    events,
    redis,
    add: (chainId, name, data, businessKey) =>
      queueOf(queues, chainId).add(name, data, { ...TX_JOB_DEFAULTS, jobId: txJobId(name, businessKey) }),
    finish: (job, timeoutMs = 30_000) => job.waitUntilFinished(queueOf(events, job.data.chainId), timeoutMs),
    stop: async () => {
      await Promise.all(submitters.map((r) => r.stop()));
      for (const chainId of [SENDING, RECEIVING]) {
        await queueOf(events, chainId).close();
        await queueOf(queues, chainId)
          .obliterate({ force: true })
          .catch(() => undefined);
        await queueOf(queues, chainId).close();
      }
      redis.disconnect();
    },
  };
}

export function keyOf(transfer: Transfer): string {
  return transferKey(transfer.txData.transactionId, transfer.txData.user);
}

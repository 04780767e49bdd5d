import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Queue } from "bullmq";
import { Wallet, ZeroAddress, parseEther } from "ethers";
import { Pool } from "pg";
import { createApp, type AdminAppDeps } from "../../services/admin/app";
import { closeServer, listen } from "../../services/admin/listen";
import { startLedger } from "../../services/ledger/start-ledger";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { createLedgerPool, type LedgerPool } from "../../shared/ledger/database";
import { createLedgerReports } from "../../shared/ledger/ledger-reports";
import { readSwapRows } from "../../shared/ledger/swap-reads";
import { createLogger } from "../../shared/logging/create-logger";
import { swapViewOf } from "../../shared/protocol/ledger";
import { abiFulfillArgs } from "../../shared/protocol/router-signatures";
import { signFulfill } from "../../shared/protocol/user-signatures";
import { TX_JOB, txJobId } from "../../shared/queues";
import { redisOptions } from "../../shared/queues/connection";
import {
  bookTransactionJobId,
  LEDGER_JOB,
  LEDGER_QUEUE_NAME,
  type BookTransactionJobData,
  type LedgerTxKind,
} from "../../shared/queues/ledger-jobs";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { pollUntil } from "../../shared/timing";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import type { PostgresSuite } from "../harness/postgres";
import type { StackChain } from "../harness/stack";
import { waitFor } from "../harness/wait";
import { validConfig } from "../unit/config-fixtures";
import {
  RECEIVING,
  SENDING,
  increaseTime,
  keyOf,
  makeTransfer,
  receiverTxData,
  startRun,
  type LifecycleStack,
} from "./lifecycle-fixture";

/** USD per ETH on both chains' own oracles, and per TEST (18 decimals). */
export const NATIVE_USD = 2000n;
export const TEST_USD = 1n;
export const SWAP_AMOUNT = parseEther("10");
/** What the user pays the router's signer for relaying its receiving fulfill. */
export const RELAYER_FEE = parseEther("0.5");
/** Chain time between the claimed swap's receiving side and its claim, so the two fall in different hours. */
export const CLAIM_DELAY_SEC = 2 * 3600;

/** A transaction of the seed, as named to the ledger. */
export interface SeededTx {
  readonly chainId: number;
  readonly hash: string;
  /** Set for what the router's signer sent; absent for the user's own transactions. */
  readonly kind?: LedgerTxKind;
}

export interface BookedSwaps {
  readonly config: RouterConfig;
  /** The claimed swap (relayed by the router's signer) and the cancelled one (a forged bid, refunded). */
  readonly claimedId: string;
  readonly cancelledId: string;
  readonly txs: readonly SeededTx[];
  /** The approval booked while chain RECEIVING had no oracle: its cost stays unpriced. */
  readonly unpricedHash: string;
  /** Block time of the claim (the sending-side fulfill). */
  readonly claimTime: number;
  /** One second past the newest block of either chain: `to` that takes in every booked row. */
  readonly end: number;
  readonly pool: Pool;
}

const logger = createLogger({ level: "silent", service: "ledger" });

/** The lifecycle stack's config with the ledger on and both chains' oracles named. */
export function ledgerConfigOf(
  base: RouterConfig,
  s: LifecycleStack,
  databaseUrl: string,
  priced = true,
): RouterConfig {
  const ledger = loadConfig(
    { ...validConfig(), ledger: { databaseUrl, receiptRetryDelayMs: 200, receiptAttempts: 1000 } },
    {},
  ).config.ledger;
  const chains: Record<string, unknown> = { ...base.chainConfig };
  for (const chain of [s.sending, s.receiving]) {
    const withOracle = priced || chain.chainId !== RECEIVING;
    chains[String(chain.chainId)] = {
      ...base.chainConfig[String(chain.chainId)],
      priceOracleAddress: withOracle ? chain.deployment.priceOracle : undefined,
    };
  }
  return { ...base, ledger, chainConfig: chains } as RouterConfig;
}

async function setPrices(chain: StackChain): Promise<void> {
  const oracle = nxtpContractAt("ConnextPriceOracle", chain.deployment.priceOracle, chain.deployer);
  await sendTx(oracle, "setDirectPrice", [ZeroAddress, parseEther(NATIVE_USD.toString())]);
  await sendTx(oracle, "setDirectPrice", [chain.deployment.token, parseEther(TEST_USD.toString())]);
}

/**
 * Real swaps on two anvil chains, booked by the real ledger process from what the chains hold: a swap claimed
 * through the submitter's jobs (its receiving fulfill relayed by the router's signer for RELAYER_FEE, its claim
 * CLAIM_DELAY_SEC of chain time later unless `claimDelaySec` says otherwise), a swap refused (forged bid) and refunded by cancel-sender, an add-liquidity of the
 * router, and an approval booked while RECEIVING had no oracle (unpriced). Every transaction is named to the
 * ledger queue as the producers will name them (the router's with their kind, the user's without).
 */
export async function seedBookedSwaps(
  s: LifecycleStack,
  pg: PostgresSuite,
  name: string,
  opts: { readonly claimDelaySec?: number } = {},
): Promise<BookedSwaps> {
  const claimDelaySec = opts.claimDelaySec ?? CLAIM_DELAY_SEC;
  for (const chain of [s.sending, s.receiving]) await setPrices(chain);
  const run = await startRun(s, "direct");
  const databaseUrl = await pg.server.createDatabase(name);
  const config = ledgerConfigOf(run.config, s, databaseUrl);
  const txs: SeededTx[] = [];
  const routerOn = (chain: StackChain) => Wallet.fromPhrase(s.mnemonic).connect(chain.provider);
  let claimedId: string;
  let cancelledId: string;
  let unpricedHash: string;
  let claimTime: number;
  try {
    // 1. The claimed swap: the user prepares, the router prepares the receiving side (a submitter job)...
    const t = await makeTransfer(s, { mode: "direct", amount: SWAP_AMOUNT });
    claimedId = t.txData.transactionId;
    txs.push({ chainId: SENDING, hash: t.sender.prepareTransactionHash });
    const prepared = await run.finish(
      await run.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t)),
    );
    txs.push({ chainId: RECEIVING, hash: prepared.transactionHash, kind: "prepare" });
    // ...the router's signer relays the user's signed fulfill for a fee...
    const receiver = await receiverTxData(s, prepared);
    const signature = await signFulfill(s.userSigner, {
      transactionId: receiver.transactionId,
      relayerFee: RELAYER_FEE.toString(),
      receivingChainId: RECEIVING,
      receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
    });
    const relayTm = nxtpContractAt(
      "TransactionManager",
      s.receiving.deployment.transactionManager,
      routerOn(s.receiving),
    );
    const relay = await sendTx(relayTm, "fulfill", [
      abiFulfillArgs({
        txData: receiver,
        relayerFee: RELAYER_FEE.toString(),
        signature,
        callData: "0x",
        encodedMeta: "0x",
      }),
    ]);
    txs.push({ chainId: RECEIVING, hash: relay.hash, kind: "relay" });
    // ...and claims the sending side two hours later (a submitter job; at once with claimDelaySec 0).
    if (claimDelaySec > 0) await increaseTime(s, claimDelaySec);
    const claimed = await run.finish(
      await run.add(
        SENDING,
        TX_JOB.fulfillSender,
        {
          chainId: SENDING,
          txData: t.txData,
          signature,
          relayerFee: RELAYER_FEE.toString(),
          callData: "0x",
          receiverFulfillTransactionHash: relay.hash,
        },
        keyOf(t),
      ),
    );
    txs.push({ chainId: SENDING, hash: claimed.transactionHash, kind: "fulfill" });
    const claimReceipt = await s.sending.provider.getTransactionReceipt(claimed.transactionHash);
    claimTime = (await s.sending.provider.getBlock(claimReceipt?.blockNumber ?? 0))?.timestamp ?? 0;

    // 2. The cancelled swap: a bid the router never signed, refused and refunded by the submitter at once.
    const forger = createMnemonicSigner(Wallet.createRandom().mnemonic?.phrase ?? "");
    const forged = await makeTransfer(s, { mode: "direct", bidSigner: forger });
    cancelledId = forged.txData.transactionId;
    txs.push({ chainId: SENDING, hash: forged.sender.prepareTransactionHash });
    await expect(
      run.finish(
        await run.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: forged.sender }, keyOf(forged)),
      ),
    ).rejects.toThrow(/BID_SIGNER_MISMATCH/);
    const refund = await waitFor(
      "the refund job",
      async () => (await run.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(forged)))) ?? undefined,
    );
    const refunded = await run.finish(refund);
    txs.push({ chainId: SENDING, hash: refunded.transactionHash, kind: "cancel" });

    // 3. Liquidity and upkeep the router's signer paid for.
    const tm = nxtpContractAt("TransactionManager", s.sending.deployment.transactionManager, routerOn(s.sending));
    const added = await sendTx(tm, "addLiquidity", [parseEther("1"), ZeroAddress], { value: parseEther("1") });
    txs.push({ chainId: SENDING, hash: added.hash, kind: "add-liquidity" });
    const token = nxtpContractAt("ERC20", s.receiving.deployment.token, routerOn(s.receiving));
    const approved = await sendTx(token, "approve", [s.receiving.deployment.transactionManager, 1n]);
    unpricedHash = approved.hash;
  } finally {
    await run.stop();
  }

  // 4. The ledger books them all from the chains; the approval by a ledger that knows no price on RECEIVING.
  const queue = new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, {
    connection: redisOptions(s.redisUrl),
    prefix: config.redisPrefix,
  });
  const name_ = async (tx: SeededTx): Promise<void> => {
    const data: BookTransactionJobData = {
      chainId: tx.chainId,
      hash: tx.hash.toLowerCase(),
      source: tx.kind ? "submitter" : "poller",
      ...(tx.kind ? { kind: tx.kind } : {}),
    };
    await queue.add(LEDGER_JOB.bookTransaction, data, { jobId: bookTransactionJobId(tx.chainId, tx.hash) });
  };
  const booked = (tx: SeededTx) =>
    pollUntil(
      `${tx.hash} booked`,
      async () => (await queue.getJobState(bookTransactionJobId(tx.chainId, tx.hash))) === "completed",
      60_000,
    );
  try {
    let ledger = await startLedger({ config, logger, env: {} });
    try {
      for (const tx of txs) await name_(tx);
      for (const tx of txs) await booked(tx);
    } finally {
      await ledger.stop();
    }
    const approval: SeededTx = { chainId: RECEIVING, hash: unpricedHash, kind: "approve" };
    ledger = await startLedger({ config: ledgerConfigOf(run.config, s, databaseUrl, false), logger, env: {} });
    try {
      await name_(approval);
      await booked(approval);
    } finally {
      await ledger.stop();
    }
    txs.push(approval);
  } finally {
    await queue.close();
  }
  const latest = Math.max(
    (await s.sending.provider.getBlock("latest"))?.timestamp ?? 0,
    (await s.receiving.provider.getBlock("latest"))?.timestamp ?? 0,
  );
  const pool = new Pool({ connectionString: databaseUrl });
  pool.on("error", () => undefined); // the cluster may stop before the test ends the pool
  return { config, claimedId, cancelledId, txs, unpricedHash, claimTime, end: latest + 1, pool };
}

/** The admin app over the books (read-only pool), on a free loopback port. */
export async function serveLedgerAdmin(
  config: RouterConfig,
  signerAddress: string,
  extra: Partial<AdminAppDeps> = {},
): Promise<{ server: Server; baseUrl: string; reader: LedgerPool; stop(): Promise<void> }> {
  const ledger = config.ledger;
  if (!ledger) throw new Error("no ledger config");
  const reader = createLedgerPool({ ledger, logger, mode: "reader", service: "admin" });
  const refused = async (): Promise<never> => {
    throw new Error("not used by this test");
  };
  const server = await listen(
    createApp({
      config,
      logger: createLogger({ level: "silent", service: "admin" }),
      signerAddress,
      operations: { removeLiquidity: refused, cancelSender: refused },
      ledger: async (id) =>
        swapViewOf({ transactionId: id, signer: signerAddress, ...(await readSwapRows(reader, id)) }),
      ledgerReports: createLedgerReports(reader, signerAddress),
      ...extra,
    }),
    "127.0.0.1",
    0,
  );
  return {
    server,
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    reader,
    stop: async () => {
      await closeServer(server);
      await reader.end();
    },
  };
}

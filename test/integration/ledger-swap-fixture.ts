import { Queue } from "bullmq";
import { HDNodeWallet, parseEther, type ContractTransactionReceipt } from "ethers";
import { Pool } from "pg";
import { createChainProvider, type ChainProvider } from "../../shared/chain/chain-provider";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { createLogger } from "../../shared/logging/create-logger";
import { redisOptions } from "../../shared/queues/connection";
import {
  bookTransactionJobId,
  LEDGER_QUEUE_NAME,
  nameTransaction,
  type BookTransactionJobData,
} from "../../shared/queues/ledger-jobs";
import { pollUntil } from "../../shared/timing";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { usePostgres } from "../harness/postgres";
import {
  pollerConfigJson,
  RECEIVING,
  routerPrepareReceiver,
  SENDING,
  startPollerStack,
  userFulfill,
  userPrepare,
  type PollerStack,
} from "./poller-fixture";

export { RECEIVING, SENDING };

/** A transaction on one chain, as a producer names it. */
export interface Named {
  readonly chainId: number;
  readonly hash: string;
  readonly kind?: BookTransactionJobData["kind"];
}

export interface LedgerSwapSuite {
  readonly s: PollerStack;
  readonly config: RouterConfig;
  /** The raw config JSON (what a child process reads from its file). */
  readonly configJson: Record<string, unknown>;
  readonly databaseUrl: string;
  readonly pool: Pool;
  readonly queue: Queue<BookTransactionJobData>;
  readonly prefix: string;
  readonly signer: string;
  providerFor(chainId: number): ChainProvider;
  /** The router's signer on a chain. */
  routerWallet(chainId: number): HDNodeWallet;
  name(tx: Named, source?: BookTransactionJobData["source"]): Promise<void>;
  waitDone(tx: Named): Promise<void>;
  /** Real liquidity operations by the router's signer on the receiving chain: native add, native remove to itself. */
  liquidityOps(): Promise<Named[]>;
  /** A whole swap on the two chains: user prepare, router's receiving prepare, user fulfill, router's claim. */
  swap(userIndex: number): Promise<Named[]>;
}

/**
 * Two anvil chains with the real NXTP contracts (poller-fixture: the router has token liquidity on the
 * receiving chain), a real redis, a PostgreSQL database of the file's own, and a config with a ledger section.
 */
export function useLedgerSwapSuite(name: string, ledger: Record<string, unknown> = {}): LedgerSwapSuite {
  const pg = usePostgres();
  let state:
    | {
        s: PollerStack;
        config: RouterConfig;
        configJson: Record<string, unknown>;
        databaseUrl: string;
        pool: Pool;
        queue: Queue<BookTransactionJobData>;
        signer: string;
      }
    | undefined;
  const providers = new Map<number, ChainProvider>();
  const prefix = `ledger-${name}-${Date.now().toString(36)}`;
  const get = () => {
    if (!state) throw new Error("useLedgerSwapSuite: read before beforeAll ran");
    return state;
  };
  const silent = createLogger({ level: "silent", service: "test" });

  beforeAll(async () => {
    const s = await startPollerStack();
    await s.sending.anvil.setBalance(await s.routerSigner.getAddress(), parseEther("100"));
    const databaseUrl = await pg.server.createDatabase(name);
    const configJson = {
      ...pollerConfigJson(s, prefix, { logLevel: "silent" }),
      ledger: { databaseUrl, receiptRetryDelayMs: 200, receiptAttempts: 1000, ...ledger },
    };
    const pool = new Pool({ connectionString: databaseUrl });
    pool.on("error", () => undefined);
    state = {
      s,
      config: loadConfig(configJson, {}).config,
      configJson,
      databaseUrl,
      pool,
      queue: new Queue(LEDGER_QUEUE_NAME, { connection: redisOptions(s.redisUrl), prefix }),
      signer: (await s.routerSigner.getAddress()).toLowerCase(),
    };
  }, 120_000);

  afterAll(async () => {
    for (const p of providers.values()) p.destroy();
    await state?.queue.close();
    await state?.pool.end();
    await state?.s.stack.stop();
  });

  const chainOf = (chainId: number) => (chainId === SENDING ? get().s.sending : get().s.receiving);
  const routerWallet = (chainId: number) =>
    HDNodeWallet.fromPhrase(get().s.mnemonic).connect(chainOf(chainId).provider);
  const named = (chainId: number, r: ContractTransactionReceipt, kind?: Named["kind"]): Named => ({
    chainId,
    hash: r.hash.toLowerCase(),
    kind,
  });

  return {
    get s() {
      return get().s;
    },
    get config() {
      return get().config;
    },
    get configJson() {
      return get().configJson;
    },
    get databaseUrl() {
      return get().databaseUrl;
    },
    get pool() {
      return get().pool;
    },
    get queue() {
      return get().queue;
    },
    get signer() {
      return get().signer;
    },
    prefix,
    providerFor: (chainId) => {
      let p = providers.get(chainId);
      if (!p) {
        p = createChainProvider({ chainId, urls: [chainOf(chainId).anvil.url], logger: silent });
        providers.set(chainId, p);
      }
      return p;
    },
    routerWallet,
    name: async (tx, source = "submitter") => {
      await nameTransaction(get().queue, { chainId: tx.chainId, hash: tx.hash, source, kind: tx.kind });
    },
    waitDone: async (tx) => {
      await pollUntil(
        `the booking of ${tx.hash} on ${tx.chainId}`,
        async () => (await get().queue.getJobState(bookTransactionJobId(tx.chainId, tx.hash))) === "completed",
        30_000,
      );
    },
    liquidityOps: async () => {
      const tm = nxtpContractAt(
        "TransactionManager",
        chainOf(RECEIVING).deployment.transactionManager,
        routerWallet(RECEIVING),
      );
      const native = "0x0000000000000000000000000000000000000000";
      const added = await sendTx(tm, "addLiquidity", [parseEther("2"), native], { value: parseEther("2") });
      const removed = await sendTx(tm, "removeLiquidity", [parseEther("0.5"), native, routerWallet(RECEIVING).address]);
      return [named(RECEIVING, added, "add-liquidity"), named(RECEIVING, removed, "remove-liquidity")];
    },
    swap: async (userIndex) => {
      const s = get().s;
      const prepared = await userPrepare(s, { user: userIndex });
      const receiverPrepare = await routerPrepareReceiver(s, prepared);
      const fulfilled = await userFulfill(s, prepared, receiverPrepare);
      const tm = nxtpContractAt("TransactionManager", s.sending.deployment.transactionManager, routerWallet(SENDING));
      const claim = await sendTx(tm, "fulfill", [
        {
          txData: {
            ...prepared.invariant,
            amount: prepared.lockedAmount,
            expiry: prepared.bid.expiry,
            preparedBlockNumber: prepared.receipt.blockNumber,
          },
          relayerFee: 0,
          signature: fulfilled.signature,
          callData: "0x",
          encodedMeta: "0x",
        },
      ]);
      return [
        named(SENDING, prepared.receipt),
        named(RECEIVING, receiverPrepare, "prepare"),
        named(RECEIVING, fulfilled.receipt),
        named(SENDING, claim, "fulfill"),
      ];
    },
  };
}

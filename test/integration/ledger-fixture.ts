import { Queue } from "bullmq";
import { HDNodeWallet, parseEther, ZeroAddress } from "ethers";
import { Pool } from "pg";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { redisOptions } from "../../shared/queues/connection";
import {
  bookTransactionJobId,
  LEDGER_JOB,
  LEDGER_QUEUE_NAME,
  type BookTransactionJobData,
} from "../../shared/queues/ledger-jobs";
import { pollUntil } from "../../shared/timing";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { usePostgres } from "../harness/postgres";
import { CHAIN_ID, startSubmitterStack, type SubmitterStack } from "./submitter-fixture";

export { CHAIN_ID };
/** USD 2000 per ETH on chain 1337's own oracle. */
export const NATIVE_PRICE_E18 = parseEther("2000");

export interface LedgerSuite {
  readonly s: SubmitterStack;
  readonly config: RouterConfig;
  /** A pool on the ledger database, for the test's own reads. */
  readonly pool: Pool;
  readonly queue: Queue<BookTransactionJobData>;
  /** The router's signer, connected to the chain. */
  routerWallet(): HDNodeWallet;
  enqueue(hash: string, kind?: BookTransactionJobData["kind"]): Promise<void>;
  waitDone(hash: string): Promise<void>;
}

/**
 * The ledger's test bed: anvil with the real NXTP contracts and a funded router signer (submitter-fixture), a
 * real redis, a PostgreSQL cluster of the file's own, chain 1337's oracle pricing ETH, and the ledger queue.
 */
export function useLedgerSuite(name: string): LedgerSuite {
  const pg = usePostgres();
  let state: Omit<LedgerSuite, "routerWallet" | "enqueue" | "waitDone"> | undefined;
  const prefix = `ledger-${name}-${Date.now().toString(36)}`;
  const get = () => {
    if (!state) throw new Error("useLedgerSuite: read before beforeAll ran");
    return state;
  };

  beforeAll(async () => {
    const s = await startSubmitterStack();
    const oracle = nxtpContractAt("ConnextPriceOracle", s.chain.deployment.priceOracle, s.chain.deployer);
    await sendTx(oracle, "setDirectPrice", [ZeroAddress, NATIVE_PRICE_E18]);
    const databaseUrl = await pg.server.createDatabase(name);
    const raw = {
      adminToken: "integration-test-admin-token",
      mnemonic: s.mnemonic,
      logLevel: "silent",
      redisUrl: s.redisUrl,
      redisPrefix: prefix,
      swapPools: [],
      chainConfig: {
        "1": { providers: [s.chain.anvil.url] },
        [String(CHAIN_ID)]: {
          providers: [s.chain.anvil.url],
          transactionManagerAddress: s.chain.deployment.transactionManager,
          priceOracleAddress: s.chain.deployment.priceOracle,
          confirmations: 1,
        },
      },
      ledger: { databaseUrl, receiptRetryDelayMs: 200, receiptAttempts: 1000 },
    };
    const pool = new Pool({ connectionString: databaseUrl });
    pool.on("error", () => undefined); // the cluster may stop before afterAll ends the pool
    state = {
      s,
      config: loadConfig(raw, {}).config,
      pool,
      queue: new Queue(LEDGER_QUEUE_NAME, { connection: redisOptions(s.redisUrl), prefix }),
    };
  }, 120_000);

  afterAll(async () => {
    await state?.queue.close();
    await state?.pool.end();
    await state?.s.stack.stop();
  });

  return {
    get s() {
      return get().s;
    },
    get config() {
      return get().config;
    },
    get pool() {
      return get().pool;
    },
    get queue() {
      return get().queue;
    },
    routerWallet: () => HDNodeWallet.fromPhrase(get().s.mnemonic).connect(get().s.chain.provider),
    enqueue: async (hash, kind) => {
      const data: BookTransactionJobData = { chainId: CHAIN_ID, hash: hash.toLowerCase(), source: "poller", kind };
      await get().queue.add(LEDGER_JOB.bookTransaction, data, { jobId: bookTransactionJobId(CHAIN_ID, hash) });
    },
    waitDone: async (hash) => {
      await pollUntil(
        `the job of ${hash} completed`,
        async () => (await get().queue.getJobState(bookTransactionJobId(CHAIN_ID, hash))) === "completed",
        30_000,
      );
    },
  };
}

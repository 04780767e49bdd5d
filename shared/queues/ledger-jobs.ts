import type { JobsOptions, Queue } from "bullmq";
import Joi from "joi";
import { BYTES32_SCHEMA, CHAIN_ID_SCHEMA } from "../protocol/transaction-data-schema";

/**
 * The ledger queue's contract. Submitters and pollers name a transaction they saw; the ledger process reads its
 * receipt, block and logs from the chain itself and books it once in PostgreSQL (docs/accounting.md). Naming is
 * all a producer does: the figures booked are the chain's, never a producer's copy, so a producer that lags,
 * crashes or repeats itself cannot book a wrong or double figure.
 */
export const LEDGER_QUEUE_NAME = "ledger";

export const LEDGER_JOB = {
  /** Book one mined transaction: its gas if the router's signer paid it, and the TransactionManager events of ours it holds. */
  bookTransaction: "book-transaction",
} as const;
export type LedgerJobName = (typeof LEDGER_JOB)[keyof typeof LEDGER_JOB];

/**
 * Why the router's signer sent a transaction. The first four are a swap's (`GET /ledger/<transactionId>`
 * lists them); the others are operations and upkeep, booked as such.
 */
export const LEDGER_TX_KINDS = [
  "prepare",
  "fulfill",
  "cancel",
  "relay",
  "remove-liquidity",
  "add-liquidity",
  "approve",
  "nonce-fill",
] as const;
export type LedgerTxKind = (typeof LEDGER_TX_KINDS)[number];

/** Who named the transaction: for the ledger's logs and for reconciliation's report, never for what is booked. */
export const LEDGER_SOURCES = ["submitter", "poller", "rebuild", "reconcile"] as const;
export type LedgerSource = (typeof LEDGER_SOURCES)[number];

export interface BookTransactionJobData {
  readonly chainId: number;
  /** 0x-prefixed lowercase transaction hash. */
  readonly hash: string;
  readonly source: LedgerSource;
  /**
   * Set by the submitter for what its signer sent (the job's purpose); absent when a poller names a transaction
   * someone else sent (a user's sending prepare, fulfill or cancel), which the ledger books without gas.
   */
  readonly kind?: LedgerTxKind;
  /** The swap the transaction belongs to, when the producer knows it (the ledger also reads it from the logs). */
  readonly transactionId?: string;
  /** The admin request behind a liquidity operation (remove, add, migrate), to group its transactions. */
  readonly requestId?: string;
}

export const BOOK_TRANSACTION_SCHEMA = Joi.object<BookTransactionJobData>({
  chainId: CHAIN_ID_SCHEMA.required(),
  hash: BYTES32_SCHEMA.lowercase().required(),
  source: Joi.string()
    .valid(...LEDGER_SOURCES)
    .required(),
  kind: Joi.string().valid(...LEDGER_TX_KINDS),
  transactionId: BYTES32_SCHEMA,
  requestId: Joi.string().max(128),
}).required();

/**
 * One job per (chain, transaction) while it is kept: a second naming by another producer, or the same one after
 * a crash, joins it. The ledger's rows are keyed the same way, so a naming after the job was removed books nothing new.
 */
export function bookTransactionJobId(chainId: number, hash: string): string {
  return `book-${chainId}-${hash.toLowerCase()}`;
}

/**
 * A ledger job is a money record: the ledger process retries it through a database outage of hours (12 attempts,
 * doubling from 5 s: about 5.7 h in all), and a job that still fails is kept (never removed) for an operator to
 * inspect and retry. A completed one is kept a week, so a repeated naming in that time joins it instead of
 * making the ledger read the chain again (after that the ledger's primary key makes a repeat harmless).
 */
export const BOOK_TRANSACTION_JOB_OPTIONS: Omit<JobsOptions, "jobId"> = {
  attempts: 12,
  backoff: { type: "exponential", delay: 5_000 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 100_000 },
  removeOnFail: false,
};

/**
 * Names one transaction to the ledger (the reconciliation's self-heal; producers batch the same jobs through
 * shared/process/ledger-producer.ts). Its id joins a repeat while kept; the rows' keys make any later naming harmless.
 */
export async function nameTransaction(
  queue: Pick<Queue<BookTransactionJobData>, "add">,
  data: BookTransactionJobData,
): Promise<void> {
  const job = { ...data, hash: data.hash.toLowerCase() };
  await queue.add(LEDGER_JOB.bookTransaction, job, {
    ...BOOK_TRANSACTION_JOB_OPTIONS,
    jobId: bookTransactionJobId(job.chainId, job.hash),
  });
}

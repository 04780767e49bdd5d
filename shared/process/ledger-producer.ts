import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { errorMessage } from "../errors";
import { keyedThrottledLog, throttledErrorLog } from "../logging/throttled-error-log";
import type { RouterConfig } from "../config/types";
import type { Logger } from "../logging/create-logger";
import { routerMetrics } from "../metrics/router-metrics";
import {
  BOOK_TRANSACTION_JOB_OPTIONS,
  BOOK_TRANSACTION_SCHEMA,
  LEDGER_JOB,
  LEDGER_QUEUE_NAME,
  bookTransactionJobId,
  type BookTransactionJobData,
} from "../queues/ledger-jobs";
import { loadBullMQ } from "./process-resources";

/**
 * Names already added by this process are not sent again (a subgraph lists every open transfer each tick, a job
 * re-run after a restart names its transaction again). Only a saving of Redis round trips: a new process
 * starts empty and names once more, which the deterministic job id and the ledger's key make harmless.
 */
const RECENTLY_NAMED_LIMIT = 10_000;

/** Adds `book-transaction` jobs; what a producer does with a refusal is its caller's choice (see `name`). */
export interface LedgerProducer {
  /**
   * Names mined transactions to the ledger (one job per chain and hash). Never throws: an entry that fails the
   * queue contract's schema is a bug, logged and dropped (naming it again cannot fix it); a Redis refusal is
   * logged (throttled), counted, and reported as `false`, so the caller keeps what lets it name again: the
   * submitter its job (parked, resumed from its confirmed record, nothing sent), the poller its cursor.
   */
  name(entries: readonly BookTransactionJobData[]): Promise<boolean>;
}

export function createLedgerProducer(p: {
  readonly queue: Pick<Queue, "addBulk">;
  readonly logger: Logger;
  /** Label of the metrics: the chain of the process (a submitter or poller is one chain's). */
  readonly chainId: number;
}): LedgerProducer {
  const recent = new Map<string, true>();
  const log = keyedThrottledLog(p.logger);
  const m = routerMetrics();
  const chain = String(p.chainId);

  const valid = (entry: BookTransactionJobData): BookTransactionJobData | undefined => {
    const checked = BOOK_TRANSACTION_SCHEMA.validate(entry, { convert: false });
    if (checked.error === undefined) {
      return entry;
    }
    m.ledgerNamingFailures.inc({ chain, source: entry.source, reason: "invalid" });
    p.logger.error("ledger naming dropped: it does not match the queue contract", {
      at: "ledger.name",
      chainId: entry.chainId,
      transactionHash: entry.hash,
      error: checked.error.message,
    });
    return undefined;
  };

  return {
    name: async (entries) => {
      const fresh = new Map<string, BookTransactionJobData>();
      for (const entry of entries) {
        const jobId = bookTransactionJobId(entry.chainId, entry.hash);
        if (!recent.has(jobId) && !fresh.has(jobId) && valid(entry) !== undefined) {
          fresh.set(jobId, entry);
        }
      }
      if (fresh.size === 0) {
        return true;
      }
      try {
        await p.queue.addBulk(
          [...fresh].map(([jobId, data]) => ({
            name: LEDGER_JOB.bookTransaction,
            data,
            opts: { ...BOOK_TRANSACTION_JOB_OPTIONS, jobId },
          })),
        );
      } catch (err) {
        for (const entry of fresh.values()) {
          m.ledgerNamingFailures.inc({ chain, source: entry.source, reason: "redis" });
        }
        log("warn", "redis", "could not name transactions to the ledger; the caller names them again", {
          at: "ledger.name",
          chainId: p.chainId,
          transactions: fresh.size,
          error: errorMessage(err),
        });
        return false;
      }
      for (const [jobId, entry] of fresh) {
        m.ledgerNamed.inc({ chain, source: entry.source });
        recent.set(jobId, true);
        if (recent.size > RECENTLY_NAMED_LIMIT) {
          recent.delete(recent.keys().next().value as string);
        }
      }
      return true;
    },
  };
}

/** The ledger queue's producer handle on a process's Redis client (its prefix is the deployment's). */
export function openLedgerQueue(connection: Redis, prefix: string, logger: Logger): Queue<BookTransactionJobData> {
  // BullMQ comes with the queue, not with the module: a poller loads it only once it opens its queues.
  const { Queue: QueueClass } = loadBullMQ();
  const queue = new QueueClass<BookTransactionJobData>(LEDGER_QUEUE_NAME, { connection, prefix });
  // The client's own listener logs its errors too; without one here an emitted error would throw.
  queue.on("error", throttledErrorLog(logger, "ledger queue error", { at: "ledger.queue" }));
  return queue;
}

/**
 * A process's producer: the caller's own when given (a test's, on a real queue; `null` for none), else one on the
 * `ledger` queue over the process's main Redis client when the config has a `ledger` section, else none: without a
 * ledger process nothing would drain the queue, so nothing is named.
 */
export function ledgerProducerFor(p: {
  readonly config: Pick<RouterConfig, "ledger" | "redisPrefix">;
  readonly chainId: number;
  readonly redis: Redis;
  readonly logger: Logger;
  /** Closes the queue with the process's other resources (process-resources.ts `adopt`). */
  readonly adopt: (name: string, close: () => Promise<unknown>) => void;
  readonly override?: LedgerProducer | null;
}): LedgerProducer | undefined {
  if (p.override !== undefined) {
    return p.override ?? undefined;
  }
  if (p.config.ledger === undefined) {
    return undefined;
  }
  const queue = openLedgerQueue(p.redis, p.config.redisPrefix, p.logger);
  p.adopt("ledger queue", () => queue.close());
  return createLedgerProducer({ queue, logger: p.logger, chainId: p.chainId });
}

import { Queue, Worker } from "bullmq";
import { createLedgerPool } from "../../shared/ledger/database";
import { migrateLedger } from "../../shared/ledger/migrations";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import { createProcessResources } from "../../shared/process/process-resources";
import type { ServiceContext } from "../../shared/process/run-service";
import { producerConnection, workerConnection } from "../../shared/queues/connection";
import { LEDGER_QUEUE_NAME, type BookTransactionJobData } from "../../shared/queues/ledger-jobs";
import { createSigner } from "../../shared/signer/create-signer";
import { RouterError, errorClass } from "../../shared/errors";
import { createDecimalsLookup } from "../../shared/ledger/chain-reads";
import { createLedgerPricer } from "../../shared/ledger/prices";
import { createLedgerProcessor, type LedgerJobResult } from "./processor";
import { startReconciler } from "./reconciler";
import { startRepricer } from "./repricer";

/** The ledger app runs only with a `ledger` section (ecosystem.config.js); started without one, it says so. */
export class LedgerNotConfiguredError extends errorClass(RouterError, "LEDGER_NOT_CONFIGURED", "terminal") {}

/**
 * The ledger process (docs/accounting.md): migrates the books' schema (one instance at a time), then books
 * every `book-transaction` job of the ledger queue into PostgreSQL. `stop()` stops taking jobs and lets the
 * ones in flight finish (BullMQ's close), then closes the pool and every other resource.
 */
/**
 * How often the worker looks for bookings a dead ledger process left active. BullMQ needs two looks to move one
 * back, so at its default (30 s) the books resumed about a minute after a crash, 90 s at worst; 5 s brings that
 * down to the lock's own expiry (30 s after its last renewal) for one cheap script call every 5 s.
 */
export const LEDGER_STALLED_INTERVAL_MS = 5_000;

export async function startLedger({ config, logger, observe }: ServiceContext): Promise<{ stop(): Promise<void> }> {
  const ledger = config.ledger;
  if (ledger === undefined) {
    throw new LedgerNotConfiguredError("the config has no `ledger` section: the books are off (docs/config.md#ledger)");
  }
  const signer = await createSigner({
    mnemonic: config.mnemonic,
    remoteSignerUrl: config.remoteSignerUrl,
  }).getAddress();
  const routerAddress = config.routerContractAddress ?? signer;
  const resources = createProcessResources({ config, logger, service: "ledger", redisKind: "worker" });
  const pool = createLedgerPool({ ledger, logger, mode: "writer", service: "ledger" });
  resources.adopt("ledger database", () => pool.end());
  try {
    const { applied, version } = await migrateLedger(pool, logger);
    logger.info("ledger: schema ready", { at: "ledger.migrate", version, applied });
  } catch (err) {
    await resources.close();
    throw err;
  }
  observe?.readiness.add("ledger-db", async () => {
    const result = await pool.query<{ ok: number }>("SELECT 1 AS ok");
    return result.rows[0]?.ok === 1 ? undefined : "the ledger database did not answer";
  });

  const providerFor = resources.requireProvider;
  const pricer = createLedgerPricer({ config, providerFor, logger });
  const processor = createLedgerProcessor({
    config,
    pool,
    providerFor,
    decimals: createDecimalsLookup(providerFor),
    pricer,
    signer,
    routerAddress,
    logger,
    receiptRetryDelayMs: ledger.receiptRetryDelayMs,
    receiptAttempts: ledger.receiptAttempts,
  });
  const worker = new Worker<BookTransactionJobData, LedgerJobResult, string>(LEDGER_QUEUE_NAME, processor, {
    connection: workerConnection(config.redis),
    prefix: config.redisPrefix,
    concurrency: ledger.concurrency,
    stalledInterval: LEDGER_STALLED_INTERVAL_MS,
  });
  worker.on("error", throttledErrorLog(logger, "ledger worker error", { at: "ledger.worker" }));
  worker.on("failed", (job, err) => {
    logger.error("ledger: job failed", { at: "ledger.job", jobId: job?.id, data: job?.data, error: err.message });
  });
  const repricer = startRepricer({ pool, pricer, intervalMs: ledger.repriceIntervalMs, logger });
  // The reconciliation's self-heal names what it finds unbooked on the ledger's own queue, as any producer does.
  const selfHealQueue = new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, {
    connection: producerConnection(config.redis),
    prefix: config.redisPrefix,
  });
  resources.adopt("ledger self-heal queue", () => selfHealQueue.close());
  const reconciler = startReconciler({
    config,
    pool,
    providerFor,
    signer,
    routerAddress,
    logger,
    ledgerQueue: selfHealQueue,
    intervalMs: ledger.reconcileIntervalMs,
  });
  logger.info("ledger: booking", { at: "ledger.start", signer, routerAddress, concurrency: ledger.concurrency });
  return {
    stop: async () => {
      await worker.close();
      await repricer.stop();
      await reconciler.stop();
      await resources.close();
    },
  };
}

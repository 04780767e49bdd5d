import { Worker } from "bullmq";
import { getAddress } from "ethers";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../shared/chain/chain-provider";
import { cachedGasPrice, getGasPrice } from "../../shared/chain/gas-price";
import { poolPartnersOf } from "../../shared/config/pools";
import type { ChainConfig, RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import { ledgerProducerFor, type LedgerProducer } from "../../shared/process/ledger-producer";
import { chainConfigFor } from "../../shared/process/process-env";
import { createProcessResources, type ProviderTuning } from "../../shared/process/process-resources";
import { txQueueName, workerConnection, type TxJobData, type TxJobResult } from "../../shared/queues";
import { newLeaseOwnerId } from "../../shared/coordination/lease";
import { replicationGuard } from "../../shared/coordination/replication";
import { createSigner } from "../../shared/signer/create-signer";
import type { RouterSigner } from "../../shared/signer/router-signer";
import { stopOnce } from "../../shared/process/stop-once";
import { settlesWithin } from "../../shared/timing";
import type { SubmitterContext } from "./context";
import type { LeaseKeeper, SenderRole } from "./lease/lease-keeper";
import { createJobRuns, type JobRuns } from "./lease/job-runs";
import { createSenderKeeper } from "./lease/sender-keeper";
import { createSenderLease, type SenderLease } from "./lease/sender-lease";
import { createLiquidityHolds, type LiquidityHolds } from "./liquidity-in-flight";
import { createTxProcessor } from "./processor";
import type { SenderTermStuckError } from "./send/errors";
import { createNonceStore } from "./send/nonce-store";
import type { SendHooks } from "./send/send-context";
import { createSendSlot } from "./send/send-slot";
import { createTxRecordStore } from "./send/tx-record";

/**
 * The sender lease (lease/sender-lease.ts) decides which instance sends; BullMQ's lock only guards against a
 * second worker inside the holder. A new holder drops the previous holder's job locks at once
 * (lease/release-orphaned-jobs.ts), so takeover waits for the lease TTL, not for lockDuration: the lock can
 * stay long (BullMQ's 30 s default), and an event-loop stall shorter than that never makes BullMQ run a job
 * twice. See docs/submitter.md for the measured numbers.
 */
export const DEFAULT_LOCK_DURATION_MS = 30_000;
export const DEFAULT_STALLED_INTERVAL_MS = 15_000;
/**
 * Jobs of the chain run at once in the lease holder (nonces are still handed out one at a time, in the send
 * slot): each waits for its own mining and confirmations, so a slow prepare or a 12-confirmation wait no longer
 * holds the queue. Bounded because each active job polls its receipts.
 */
export const DEFAULT_CONCURRENCY = 100;
/** A new price at most this often per chain (about a block on most chains): not one lookup per transaction. */
export const DEFAULT_GAS_PRICE_MAX_AGE_MS = 1_000;
/** Takeover bound after a holder dies: a standby (or the restarted process) sends again within about this. */
export const DEFAULT_LEASE_TTL_MS = 1_000;
/**
 * A job stalled more than this many times fails, unless it has a transaction that may be on chain (job/admit-job.ts
 * decides, not BullMQ). A stalled submitter job is one whose process died mid-wait or lost the BullMQ lock, with a
 * transaction possibly in flight: failing it would report failed a job whose transaction is mined, and re-running
 * it is safe (it resumes from its record). 10 still stops a job that kills every process it runs in before it
 * sends anything.
 */
export const DEFAULT_MAX_STALLED_COUNT = 10;
/**
 * What BullMQ is told: it must never fail a job for stalling itself (in BullMQ 6 it then fails the job without
 * calling the processor, whatever its transaction did); the processor applies DEFAULT_MAX_STALLED_COUNT.
 */
const BULLMQ_MAX_STALLED_COUNT = Number.MAX_SAFE_INTEGER;
/** The worker's close: below run-service's 8 s shutdown bound, with the lease release and resources after it. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;
/** Dropping the lease is one Redis call; a Redis that does not answer must not eat the shutdown budget. */
const LEASE_RELEASE_TIMEOUT_MS = 1_000;

export interface SubmitterOptions {
  /** Receipt polling; default min(1 s, confirmationTimeoutMs / 10). Tests against anvil go lower. */
  readonly pollIntervalMs?: number;
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly maxStalledCount?: number;
  readonly closeTimeoutMs?: number;
  /** Jobs processed at once by the lease holder; DEFAULT_CONCURRENCY by default. */
  readonly concurrency?: number;
  /** Sender lease TTL (renewed every quarter of it); DEFAULT_LEASE_TTL_MS by default. */
  readonly leaseTtlMs?: number;
  /** Gas price cache lifetime; DEFAULT_GAS_PRICE_MAX_AGE_MS by default. */
  readonly gasPriceMaxAgeMs?: number;
  /** A nonce gap open this long is filled; the chain's confirmationTimeoutMs by default. */
  readonly nonceGapBoundMs?: number;
  /** Crash points for fault tests (test/fault); never set in production. */
  readonly hooks?: SendHooks;
  /**
   * Called when a sender term cannot end (SENDER_TERM_STUCK): the process no longer sends or competes for the
   * lease. main.ts crashes the process so PM2 restarts it; by default only the error is logged.
   */
  readonly onStuck?: (err: SenderTermStuckError) => void;
  /** The config's signer (mnemonic or remote) by default. */
  readonly signer?: RouterSigner;
  readonly providerOptions?: ProviderTuning;
  /**
   * Where mined transactions are named: by default a producer on the `ledger` queue when the config has a `ledger`
   * section, none without one. Tests pass their own (a real queue) or `null` for none.
   */
  readonly ledger?: LedgerProducer | null;
}

export interface StartSubmitterParams {
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly chainId: number;
  readonly options?: SubmitterOptions;
}

export interface RunningSubmitter {
  readonly worker: Worker<TxJobData, TxJobResult, string>;
  readonly signerAddress: string;
  readonly provider: ChainProvider;
  /** This process's identity in the sender lease and in the records it writes. */
  readonly ownerId: string;
  /** "sender" while this process holds the chain's sender lease, else "standby". */
  role(): SenderRole;
  /** True once the first lease decision is made and, as sender, what it owns has been taken back. */
  isReady(): boolean;
  /** Hands the active job back to the queue, drops the lease, then closes; idempotent. */
  stop(): Promise<void>;
}

/**
 * Everything one submitter process runs for its chain: providers, signer, Redis stores, the sender lease and,
 * while this process holds it, the nonce reconcile, the nonce-gap tracker and a BullMQ Worker running many jobs
 * at once, whose fresh nonces go through one send slot. Other instances of the chain are hot standbys polling
 * the lease, never a second nonce sequence. main.ts and the tests both start it here (docs/submitter.md).
 */
export async function startSubmitter(params: StartSubmitterParams): Promise<RunningSubmitter> {
  const { config, chainId } = params;
  const options = params.options ?? {};
  const chain = chainConfigFor(config, chainId);
  const logger = params.logger.child({ chainId });
  const signer = options.signer ?? createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl });
  const from = getAddress(await signer.getAddress());
  // Each queue on its own connection: the replica waits below block `main`, and must not hold up an enqueue.
  const resources = createProcessResources({
    config,
    logger,
    service: "submitter",
    redisKind: "worker",
    txQueueConnection: "own",
    providerOptions: options.providerOptions,
  });
  const provider = resources.requireProvider(chainId);
  const queue = resources.requireTxQueue(chainId);
  // A prepare reads its sending chain's queue and provider, a fulfill its receiving chain's.
  resources.open(poolPartnersOf(config, chainId));
  const redis = resources.redis();
  // Replica waits (redis.minReplicas) block the connection they run on for up to the ack timeout: the sender lease
  // then gets its own connection, so a slow replica never delays a renewal (and never loses the lease by itself).
  const replication = replicationGuard(redis, config.redisPrefix, config.redisReplication);
  const leaseRedis = replication ? resources.redis("lease") : redis;
  const ownerId = newLeaseOwnerId();
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  const leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const lease = createSenderLease({
    redis: leaseRedis,
    prefix: config.redisPrefix,
    chainId,
    signerAddress: from,
    ownerId,
    ttlMs: leaseTtlMs,
  });
  try {
    await queue.setGlobalConcurrency(concurrency);
  } catch (err) {
    await resources.close();
    throw err;
  }

  const stores = sendStores({ config, chain, chainId, from, provider, signer, redis, lease, logger, options });
  const ledger = ledgerProducerFor({
    config,
    chainId,
    redis,
    logger,
    adopt: resources.adopt,
    override: options.ledger,
  });
  const ctx: SubmitterContext = {
    ...stores,
    ...(ledger !== undefined ? { ledger } : {}),
    // The current sender term's signal, read when a job starts (the processor copies the context per job).
    get signal() {
      return keeper.signal();
    },
    readProvider: resources.provider,
    txQueue: resources.txQueue,
    replication,
    leaseHeldAgain: (signal) => keeper.heldAgain(signal),
    // Outside a job (the nonce-gap filler), the mark is taken before its writes; the processor sets a job's own per
    // run. `replicated` is only ever the job's: a wait whose mark is taken at broadcast time misses a reconnect.
    markReplication: replication
      ? () => {
          const since = replication.mark();
          return () => replication.ensure(since);
        }
      : undefined,
  };
  const runs = createJobRuns();
  const worker = createTxWorker(ctx, runs, concurrency, options);
  const { keeper, stopGapTracker } = createSenderKeeper({
    ctx,
    lease,
    queue,
    worker,
    runs,
    holds: stores.liquidityHolds,
    leaseReplication: replicationGuard(leaseRedis, config.redisPrefix, config.redisReplication),
    leaseTtlMs,
    nonceGapBoundMs: options.nonceGapBoundMs,
    onStuck: options.onStuck,
  });
  logger.info("submitter started", {
    at: "submitter.start",
    queue: queue.name,
    signerAddress: from,
    ownerId,
    leaseTtlMs,
    pollIntervalMs: ctx.pollIntervalMs,
  });
  try {
    await keeper.start();
  } catch (err) {
    await worker.close().catch(() => undefined);
    await resources.close();
    throw err;
  }

  const stop = createStop({
    worker,
    keeper,
    onHalt: stopGapTracker,
    closeResources: resources.close,
    logger,
    closeTimeoutMs: options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS,
  });
  return { worker, signerAddress: from, provider, ownerId, role: keeper.role, isReady: keeper.isReady, stop };
}

/** The chain's send state in Redis (records, nonces, liquidity holds), each write fenced by the sender lease. */
function sendStores(p: {
  config: RouterConfig;
  chain: ChainConfig;
  chainId: number;
  from: string;
  provider: ChainProvider;
  signer: RouterSigner;
  redis: Redis;
  lease: SenderLease;
  logger: Logger;
  options: SubmitterOptions;
}): Omit<SubmitterContext, "signal" | "readProvider" | "txQueue" | "replication" | "replicated"> & {
  liquidityHolds: LiquidityHolds;
} {
  const { config, chain, chainId, from, provider, redis, logger, options } = p;
  const prefix = config.redisPrefix;
  const fence = p.lease.current;
  const records = createTxRecordStore({ redis, prefix, chainId, fence });
  return {
    config,
    chain,
    chainId,
    from,
    provider,
    signer: p.signer,
    records,
    nonces: createNonceStore({ redis, prefix, chainId, signerAddress: from, provider, fence }),
    gasPrice: cachedGasPrice(
      () => getGasPrice(chain, { provider, logger }),
      options.gasPriceMaxAgeMs ?? DEFAULT_GAS_PRICE_MAX_AGE_MS,
    ),
    logger,
    pollIntervalMs: options.pollIntervalMs ?? Math.min(1000, Math.floor(chain.confirmationTimeoutMs / 10)),
    lease: p.lease,
    sendSlot: createSendSlot(),
    liquidityHolds: createLiquidityHolds({ redis, prefix, chainId, signerAddress: from, records, fence }),
    maxStalledCount: options.maxStalledCount ?? DEFAULT_MAX_STALLED_COUNT,
    hooks: options.hooks,
    redis,
  };
}

const WORKER_RUN_RETRY_DELAY_MS = 1_000;

/** The chain's BullMQ worker: it runs only while this process holds the sender lease (the keeper resumes it). */
function createTxWorker(
  ctx: SubmitterContext,
  runs: JobRuns,
  concurrency: number,
  options: SubmitterOptions,
): Worker<TxJobData, TxJobResult, string> {
  const { config, logger } = ctx;
  const processor = runs.track(createTxProcessor(ctx));
  const worker = new Worker<TxJobData, TxJobResult, string>(txQueueName(ctx.chainId), processor, {
    connection: workerConnection(config.redis),
    prefix: config.redisPrefix,
    concurrency,
    autorun: false,
    lockDuration: options.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS,
    stalledInterval: options.stalledIntervalMs ?? DEFAULT_STALLED_INTERVAL_MS,
    maxStalledCount: BULLMQ_MAX_STALLED_COUNT,
    // After a Redis error BullMQ waits this long before it fetches again or records a finished job (its default is
    // 15 s): Redis back from a 30 s outage, the chain's sending could sit idle that long. The connections come back
    // within a second (reconnectDelayMs); a failed call is retried every second, and its error log is throttled.
    runRetryDelay: WORKER_RUN_RETRY_DELAY_MS,
  });
  attachWorkerListeners(worker, logger);
  return worker;
}
/**
 * Idempotent: the active job hands itself back (abort), the worker closes within a bound, the lease is dropped,
 * then the resources (queues, Redis, providers) close within theirs.
 */
function createStop(p: {
  worker: Worker<TxJobData, TxJobResult, string>;
  keeper: Pick<LeaseKeeper, "halt" | "release">;
  onHalt: () => void;
  closeResources: () => Promise<void>;
  logger: Logger;
  closeTimeoutMs: number;
}): () => Promise<void> {
  return stopOnce(async () => {
    p.keeper.halt();
    p.onHalt();
    if (!(await settlesWithin(p.worker.close(), p.closeTimeoutMs))) {
      // close(true) is a no-op once close() has started (BullMQ 6.7 returns the pending promise); dropping
      // the connections instead lets the stuck job's lock lapse so a standby takes it over.
      p.logger.warn("worker did not close in time; disconnecting", { at: "submitter.stop" });
      // Not awaited: BullMQ waits for the blocking client's `end`, never emitted while it waits to reconnect.
      void p.worker.disconnect().catch(() => undefined);
    }
    // After the worker: the handed-back job is picked up by the standby that takes the dropped lease.
    await settlesWithin(
      p.keeper.release().catch(() => undefined),
      LEASE_RELEASE_TIMEOUT_MS,
    );
    await p.closeResources();
  });
}

function attachWorkerListeners(worker: Worker<TxJobData, TxJobResult, string>, logger: Logger): void {
  worker.on("error", throttledErrorLog(logger, "worker error", { at: "submitter.worker" }));
  worker.on("stalled", (jobId, prev) => {
    logger.warn("job stalled: its worker died or lost the lock; it runs again from its record", {
      at: "submitter.worker",
      jobId,
      prev,
    });
  });
  worker.on("failed", (job, err) => {
    logger.debug("job failed event", {
      at: "submitter.worker",
      jobId: job?.id,
      attemptsMade: job?.attemptsMade,
      error: err.message,
    });
  });
}

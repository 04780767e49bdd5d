import { Queue, Worker } from "bullmq";
import { getAddress } from "ethers";
import { Redis } from "ioredis";
import { createChainProvider, type ChainProvider, type ChainProviderOptions } from "../../shared/chain/chain-provider";
import { getGasPrice } from "../../shared/chain/gas-price";
import type { RouterConfig } from "../../shared/config/types";
import { errorMessage } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import { txQueueName, workerConnection, type TxJobData, type TxJobResult } from "../../shared/queues";
import { createSigner } from "../../shared/signer/create-signer";
import type { RouterSigner } from "../../shared/signer/router-signer";
import { createChainHandles } from "./chain-handles";
import type { SubmitterContext } from "./context";
import { createTxProcessor } from "./processor";
import { chainConfigFor } from "../../shared/process/process-env";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import { createNonceStore } from "./send/nonce-store";
import { reconcileNonce } from "./send/reconcile-nonce";
import { createTxRecordStore } from "./send/tx-record";

/**
 * lockDuration: a job stays active for as long as its transaction takes to be mined and confirmed (minutes),
 * which is fine: BullMQ renews the lock every lockDuration/2 while the event loop runs. The value bounds two
 * things: how long the job of a crashed instance stays locked before a standby can take it over (about
 * lockDuration + stalledInterval), and how long an event-loop stall may last before a second worker starts
 * the same job (the record's compare-and-set then stops one of them before it sends). Nothing in the
 * processor blocks the loop (signing and RPC are async), so BullMQ's 30 s default is kept.
 */
export const DEFAULT_LOCK_DURATION_MS = 30_000;
export const DEFAULT_STALLED_INTERVAL_MS = 15_000;
/**
 * BullMQ fails a job stalled more than maxStalledCount times (default 1). A stalled submitter job is one whose
 * process died mid-wait, with a transaction possibly in flight; failing it would hide a live transaction, and
 * re-running it is safe (it resumes from its record). 10 still stops a job that kills every process it runs in.
 */
export const DEFAULT_MAX_STALLED_COUNT = 10;
/** Below run-service's 8 s shutdown bound, which is below PM2's kill_timeout. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;

const RESOURCE_CLOSE_TIMEOUT_MS = 1_000;

export interface SubmitterOptions {
  /** Receipt polling; default min(1 s, confirmationTimeoutMs / 10). Tests against anvil go lower. */
  readonly pollIntervalMs?: number;
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly maxStalledCount?: number;
  readonly closeTimeoutMs?: number;
  /** The config's signer (mnemonic or remote) by default. */
  readonly signer?: RouterSigner;
  readonly providerOptions?: Pick<ChainProviderOptions, "maxLagBlocks" | "headRefreshMs" | "requestTimeoutMs">;
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
  /** Hands the active job back to the queue, then closes; idempotent. */
  stop(): Promise<void>;
}

/**
 * Everything one submitter process runs for its chain: providers, signer, Redis stores, the nonce reconcile,
 * and a BullMQ Worker with concurrency 1 on a queue whose global concurrency is 1, so further instances of
 * the same chain are hot standbys, never a second nonce sequence. main.ts and the tests both start it here.
 */
export async function startSubmitter(params: StartSubmitterParams): Promise<RunningSubmitter> {
  const { config, chainId } = params;
  const options = params.options ?? {};
  const chain = chainConfigFor(config, chainId);
  const logger = params.logger.child({ chainId });
  const signer = options.signer ?? createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl });
  const from = getAddress(await signer.getAddress());
  const provider = createChainProvider({ chainId, urls: chain.providers, logger, ...options.providerOptions });
  const redis = new Redis(workerConnection(config.redisUrl));
  redis.on("error", throttledErrorLog(logger, "redis error", { at: "submitter.redis" }));
  const queueName = txQueueName(chainId);
  const queue = new Queue(queueName, { connection: workerConnection(config.redisUrl), prefix: config.redisPrefix });
  queue.on("error", throttledErrorLog(logger, "queue error", { at: "submitter.queue" }));
  const records = createTxRecordStore({ redis, prefix: config.redisPrefix, chainId });
  const nonces = createNonceStore({ redis, prefix: config.redisPrefix, chainId, signerAddress: from, provider });
  const handles = createChainHandles({ config, chainId, ownProvider: provider, ownQueue: queue, logger, providerOptions: options.providerOptions });
  const abort = new AbortController();
  // Bounded: with Redis unreachable, QUIT and Queue.close() wait for a reconnect that may never come.
  const closeResources = async (): Promise<void> => {
    await settlesWithin(handles.close().catch(() => undefined), RESOURCE_CLOSE_TIMEOUT_MS);
    if (!(await settlesWithin(queue.close().catch(() => undefined), RESOURCE_CLOSE_TIMEOUT_MS))) {
      await queue.disconnect().catch(() => undefined);
    }
    if (!(await settlesWithin(redis.quit().catch(() => undefined), RESOURCE_CLOSE_TIMEOUT_MS))) {
      redis.disconnect();
    }
    provider.destroy();
  };

  try {
    await queue.setGlobalConcurrency(1);
    await reconcileNonce({ nonces, records, queue, logger }).catch((err: unknown) => {
      // Allocation still takes max(stored, chain pending), so a skipped reconcile can leave a gap, never a reuse.
      logger.error("nonce reconcile failed; continuing", { at: "submitter.nonce", error: errorMessage(err) });
    });
  } catch (err) {
    await closeResources();
    throw err;
  }

  const ctx: SubmitterContext = {
    config,
    chain,
    chainId,
    from,
    provider,
    signer,
    records,
    nonces,
    gasPrice: () => getGasPrice(chain, { provider, logger }),
    logger,
    pollIntervalMs: options.pollIntervalMs ?? Math.min(1000, Math.floor(chain.confirmationTimeoutMs / 10)),
    signal: abort.signal,
    readProvider: handles.readProvider,
    txQueue: handles.txQueue,
    redis,
  };
  const worker = new Worker<TxJobData, TxJobResult, string>(queueName, createTxProcessor(ctx), {
    connection: workerConnection(config.redisUrl),
    prefix: config.redisPrefix,
    concurrency: 1,
    lockDuration: options.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS,
    stalledInterval: options.stalledIntervalMs ?? DEFAULT_STALLED_INTERVAL_MS,
    maxStalledCount: options.maxStalledCount ?? DEFAULT_MAX_STALLED_COUNT,
  });
  attachWorkerListeners(worker, logger);
  logger.info("submitter started", { at: "submitter.start", queue: queueName, signerAddress: from, pollIntervalMs: ctx.pollIntervalMs });

  const stop = createStop({ worker, abort, closeResources, logger, closeTimeoutMs: options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS });
  return { worker, signerAddress: from, provider, stop };
}


/** Idempotent: the active job hands itself back (abort), the worker closes within a bound, then the rest. */
function createStop(p: {
  worker: Worker<TxJobData, TxJobResult, string>;
  abort: AbortController;
  closeResources: () => Promise<void>;
  logger: Logger;
  closeTimeoutMs: number;
}): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => {
    stopping ??= (async () => {
      p.abort.abort();
      if (!(await settlesWithin(p.worker.close(), p.closeTimeoutMs))) {
        // close(true) is a no-op once close() has started (BullMQ 6.7 returns the pending promise); dropping
        // the connections instead lets the stuck job's lock lapse so a standby takes it over.
        p.logger.warn("worker did not close in time; disconnecting", { at: "submitter.stop" });
        await p.worker.disconnect().catch(() => undefined);
      }
      await p.closeResources();
    })();
    return stopping;
  };
}

function attachWorkerListeners(worker: Worker<TxJobData, TxJobResult, string>, logger: Logger): void {
  worker.on("error", throttledErrorLog(logger, "worker error", { at: "submitter.worker" }));
  worker.on("stalled", (jobId, prev) => {
    logger.warn("job stalled: its worker died or lost the lock; it runs again from its record", {
      at: "submitter.worker", jobId, prev,
    });
  });
  worker.on("failed", (job, err) => {
    logger.debug("job failed event", { at: "submitter.worker", jobId: job?.id, attemptsMade: job?.attemptsMade, error: err.message });
  });
}


async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

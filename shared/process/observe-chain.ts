import { Queue, type Job, type Worker } from "bullmq";
import type { ChainProvider } from "../chain/chain-provider";
import type { RouterConfig } from "../config/types";
import type { Logger } from "../logging/create-logger";
import { TX_JOB, txQueueName } from "../queues";
import type { Observability } from "../metrics/process-observability";
import { readHeartbeats } from "../metrics/heartbeat";
import { JOB_STATES, pendingTransactions, queueCounts, readChainState } from "../metrics/router-state";
import { routerMetrics } from "../metrics/router-metrics";

/**
 * Readiness of a per-chain process: at least one of the chain's providers answers and is within lag, i.e. not
 * marked lagging by the chain provider (more than its `maxLagBlocks`, DEFAULT_MAX_LAG_BLOCKS = 5, behind the best
 * head seen), so readiness and the provider's own choice of whom to read from use the one bound.
 * Also exports each provider's lag at scrape time. A process of several chains names each chain's check apart
 * (`checkName`): readiness keeps one check per name.
 */
export function observeProviders(
  obs: Observability,
  chainId: number,
  provider: ChainProvider,
  checkName = "providers",
): void {
  const m = routerMetrics();
  const chain = String(chainId);
  obs.readiness.add(checkName, () => {
    const health = provider.health();
    const inSync = health.filter((p) => p.healthy && !p.lagging && p.head !== undefined);
    // Before the first read there is no head yet: a process that has not needed its chain yet is not unready.
    if (health.every((p) => p.head === undefined && p.healthy)) {
      return undefined;
    }
    return inSync.length > 0 ? undefined : `no provider of chain ${chainId} is healthy and within lag`;
  });
  obs.onScrape(async () => {
    const health = provider.health();
    const best = Math.max(...health.map((p) => p.head ?? 0));
    for (const p of health) {
      if (p.head !== undefined) {
        m.providerHeadLag.set({ chain, provider: p.label }, best - p.head);
      }
    }
  });
}

/**
 * The chain's poller exports what the processes keep in Redis about the chain, read at scrape time: liquidity
 * and open-bid reservations per pool asset, signer gas and minGas, head and its age, subgraph (or log cursor)
 * lag, queue depth per state, pending transactions and the oldest one's age in seconds and in blocks.
 */
export function observeChainState(
  obs: Observability,
  config: RouterConfig,
  chainId: number,
): { close(): Promise<void> } {
  const m = routerMetrics();
  const chain = String(chainId);
  const queue = new Queue(txQueueName(chainId), { connection: obs.redis, prefix: config.redisPrefix });
  queue.on("error", () => undefined);
  const queueName = txQueueName(chainId);
  // The head when a pending hash was first seen: "pending for N blocks" without storing the send block.
  const firstSeenHead = new Map<string, number>();
  m.minGas.set({ chain }, Number(config.chainConfig[chain]?.minGas ?? 0));
  obs.onScrape(async () => {
    const state = await readChainState(obs.redis, config, chainId);
    if (state.gasWei !== undefined) {
      m.gasBalance.set({ chain }, Number(state.gasWei));
    }
    for (const asset of state.assets) {
      if (asset.liquidity !== undefined) {
        m.liquidity.set({ chain, asset: asset.assetId }, Number(asset.liquidity));
      }
      m.liquidityReserved.set({ chain, asset: asset.assetId }, Number(asset.reserved));
    }
    if (state.head !== undefined) {
      m.chainHead.set({ chain }, state.head);
      m.chainHeadAge.set({ chain }, state.headAgeSec ?? 0);
      m.subgraphLag.set({ chain }, Math.max(0, state.head - (state.syncedBlock ?? state.head)));
    }
    const counts = await queueCounts(queue);
    for (const s of JOB_STATES) {
      m.queueJobs.set({ queue: queueName, state: s }, counts[s] ?? 0);
    }
    const pending = await pendingTransactions(obs.redis, config.redisPrefix, queue, chainId);
    m.txPending.set({ chain }, pending.length);
    m.txOldestPendingAge.set({ chain }, pending[0]?.ageSec ?? 0);
    const live = new Set(pending.map((p) => p.hash));
    for (const hash of [...firstSeenHead.keys()]) {
      if (!live.has(hash)) {
        firstSeenHead.delete(hash);
      }
    }
    let oldestBlocks = 0;
    for (const p of pending) {
      if (state.head !== undefined && !firstSeenHead.has(p.hash)) {
        firstSeenHead.set(p.hash, state.head);
      }
      const seen = firstSeenHead.get(p.hash);
      if (seen !== undefined && state.head !== undefined) {
        oldestBlocks = Math.max(oldestBlocks, state.head - seen);
      }
    }
    m.txOldestPendingBlocks.set({ chain }, oldestBlocks);
  });
  return { close: () => queue.close().catch(() => undefined) };
}

/**
 * Job outcomes of a chain's transaction worker, from its events (no edit of the processor needed): latency and
 * attempts per queue and result, confirmed and failed transactions per operation, and completed swaps (a
 * confirmed fulfill-sender) plus one outcome line per job.
 */
export function observeTxWorker(params: { chainId: number; worker: Worker; logger: Logger }): void {
  const { chainId, worker } = params;
  const m = routerMetrics();
  const chain = String(chainId);
  const queue = txQueueName(chainId);
  const log = params.logger.child({ at: "job.outcome" });
  const durationSec = (job: Job): number => Math.max(0, ((job.finishedOn ?? Date.now()) - job.timestamp) / 1000);

  worker.on("completed", (job: Job, result: unknown) => {
    const noop = (result as { noop?: boolean } | undefined)?.noop === true;
    const seconds = durationSec(job);
    m.jobDuration.observe({ queue, result: "completed" }, seconds);
    m.jobAttempts.observe({ queue, result: "completed" }, job.attemptsMade + 1);
    if (!noop) {
      m.txConfirmed.inc({ chain, operation: job.name });
    }
    log.info("job completed", {
      job: job.name,
      jobId: job.id,
      chainId,
      transactionId: transactionIdOf(job.data),
      requestId: requestIdOf(job.data),
      result: noop ? "noop" : "confirmed",
      transactionHash: (result as { transactionHash?: string } | undefined)?.transactionHash,
      attempts: job.attemptsMade + 1,
      durationMs: Math.round(seconds * 1000),
    });
    if (job.name === TX_JOB.fulfillSender && !noop) {
      recordSwap(chain, job.data);
    }
  });
  worker.on("failed", (job: Job | undefined, err: Error) => {
    if (!job) {
      return;
    }
    // A failed attempt with attempts left comes back (delayed); only the last one ends the job.
    const final =
      job.finishedOn !== undefined || err.name === "UnrecoverableError" || job.attemptsMade >= (job.opts.attempts ?? 1);
    if (!final) {
      return;
    }
    const seconds = durationSec(job);
    m.jobDuration.observe({ queue, result: "failed" }, seconds);
    m.jobAttempts.observe({ queue, result: "failed" }, job.attemptsMade);
    m.txFailed.inc({ chain, operation: job.name });
    log.warn("job failed", {
      job: job.name,
      jobId: job.id,
      chainId,
      transactionId: transactionIdOf(job.data),
      requestId: requestIdOf(job.data),
      result: "failed",
      error: err.message,
      attempts: job.attemptsMade,
      durationMs: Math.round(seconds * 1000),
    });
  });
}

/**
 * A confirmed claim counts as a completed swap. What it earned is not counted here: an amount difference in raw
 * base units, across two assets' decimals and without the gas paid, is not a fee; the ledger process books fees from
 * the chain's receipts and logs.
 */
function recordSwap(chain: string, data: unknown): void {
  const txData = (data as { txData?: { sendingAssetId: string } }).txData;
  if (!txData) {
    return;
  }
  routerMetrics().swapsCompleted.inc({ chain, asset: txData.sendingAssetId.toLowerCase() });
}

function transactionIdOf(data: unknown): string | undefined {
  const d = data as
    { txData?: { transactionId?: string }; sender?: { txData?: { transactionId?: string } } } | undefined;
  return d?.txData?.transactionId ?? d?.sender?.txData?.transactionId;
}

function requestIdOf(data: unknown): string | undefined {
  return (data as { requestId?: string } | undefined)?.requestId;
}

/** The admin process exports every process's heartbeat (the alert on a missing one reads these). */
export function observeHeartbeats(obs: Observability, config: RouterConfig): void {
  const m = routerMetrics();
  obs.onScrape(async () => {
    for (const beat of await readHeartbeats(obs.redis, config.redisPrefix)) {
      m.processUp.set({ process: beat.processId }, beat.alive ? 1 : 0);
      m.heartbeatAge.set({ process: beat.processId }, beat.ageSec);
    }
  });
}

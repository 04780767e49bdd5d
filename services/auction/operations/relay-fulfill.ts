import type { Job, Queue } from "bullmq";
import type { ChainConfig } from "../../../shared/config/types";
import { RouterError } from "../../../shared/errors";
import { abortableDelay } from "../../../shared/timing";
import type { FulfillMetaTx } from "../../../shared/protocol/metatx-request";
import { checkUserFulfillSignature } from "../../../shared/protocol/user-signatures";
import { TX_JOB, txJobOptions, transferKey, txJobId, type RelayFulfillJobData } from "../../../shared/queues";
import { txRecordKey } from "../../../shared/coordination/keys";
import {
  boundedQueueCall,
  waitForBroadcastAs,
  type BroadcastOutcome,
  type WaitForBroadcastParams,
} from "../../../shared/queues/wait-for-broadcast";
import type { AuctionContext } from "../context";
import {
  InvalidFulfillSignatureError,
  NotAllowedFulfillRelayError,
  RelayBroadcastTimeoutError,
  RelayChainNotConfiguredError,
  RelayDisabledError,
  RelayFailedError,
  RelayQueueUnavailableError,
} from "./relay-errors";
import { decideRelayFee } from "./relay-fee";
import { checkRelayedTransfer, type RelaySideSource } from "./relay-transfer-check";

/** How long a requester waits for the broadcast before an error reply (the job itself stays queued). */
export const RELAY_BROADCAST_TIMEOUT_MS = 30_000;
/** The auction has no queue event stream: the relay job is polled, at this interval, until it is broadcast. */
export const RELAY_POLL_INTERVAL_MS = 250;
/**
 * How long the router itself keeps retrying a refusal that may pass later (RETRIED_REFUSALS), at most until the
 * receiving side's expiry: the SDK 0.1.42 asks once and ignores error replies, so nobody else would ask again.
 */
export const RELAY_RETRY_WINDOW_MS = 60_000;
/** Between two tries: the receiving chain's poller stores a prepare within about one interval of its own (1 s). */
export const RELAY_RETRY_INTERVAL_MS = 1_000;

/**
 * Refusals that may pass later without anything changing in the request: the router's own prepare not visible
 * yet, the receiving chain unreadable, the fee cache cold, Redis briefly unavailable. Every other refusal is final.
 */
const RETRIED_REFUSALS: ReadonlySet<string> = new Set([
  "RECEIVER_PREPARE_NOT_VISIBLE",
  "RELAY_CHAIN_UNAVAILABLE",
  "RELAYER_FEE_UNAVAILABLE",
  "RELAY_QUEUE_UNAVAILABLE",
]);

export interface RelayOptions {
  readonly broadcastTimeoutMs?: number;
  readonly pollIntervalMs?: number;
  readonly retryWindowMs?: number;
  readonly retryIntervalMs?: number;
  /** Aborted when the auction stops: a request being retried gives up and is answered with its last refusal. */
  readonly signal?: AbortSignal;
  /** Correlates the request, the job and their log lines. */
  readonly requestId?: string;
  /** Filled in as the request goes, for its outcome line (also when it is refused). */
  readonly trace?: RelayTrace;
}

export interface RelayTrace {
  /** Tries of the transfer checks (1 unless a refusal was retried). */
  attempts: number;
  /** Where the receiving side was proven, once it was. */
  source?: RelaySideSource;
  /** The transfer's relay job had failed with nothing signed and was run again for this request. */
  retriedFailedJob?: boolean;
}

export interface RelayOutcome {
  readonly transactionHash: string;
  readonly chainId: number;
  readonly jobId: string;
  /** The request was answered from a relay job that already existed (asked before, by anyone). */
  readonly existing: boolean;
  /** The router's fee estimate, decimal string; absent for an existing job. */
  readonly expectedFee?: string;
}

/**
 * A validated Fulfill meta-transaction → the relay job's broadcast hash (docs/relaying.md). Checks, in
 * order, each a refusal before anything is enqueued: the chain is configured with allowRelay; not in
 * diagnosticMode; the user's signature; then (relayOnce) an existing relay job for the transfer is answered as
 * it is; otherwise the transfer's state and the relayer fee, and the job is enqueued under
 * `relay-fulfill-<transactionId>-<user>` on the receiving chain's queue and waited on until broadcast. A
 * refusal in RETRIED_REFUSALS is tried again every RELAY_RETRY_INTERVAL_MS for RELAY_RETRY_WINDOW_MS (or until
 * the receiving expiry) before it is the answer.
 */
export async function relayFulfill(
  ctx: AuctionContext,
  request: FulfillMetaTx,
  options: RelayOptions = {},
): Promise<RelayOutcome> {
  const { txData } = request;
  const context = { transactionId: txData.transactionId, chainId: request.chainId };
  const chain = ctx.config.chainConfig[String(request.chainId)];
  const queue = ctx.txQueue(request.chainId);
  if (!chain || !queue) {
    throw new RelayChainNotConfiguredError(`chain ${request.chainId} is not configured on this router`, context);
  }
  if (!chain.allowRelay) {
    throw new NotAllowedFulfillRelayError(`relaying is not allowed on chain ${request.chainId}`, context);
  }
  if (ctx.config.diagnosticMode) {
    throw new RelayDisabledError("the router is in diagnosticMode and relays nothing", context);
  }
  assertUserSignature(request);

  const trace = options.trace ?? { attempts: 0 };
  const signal = options.signal ?? new AbortController().signal;
  const intervalMs = options.retryIntervalMs ?? RELAY_RETRY_INTERVAL_MS;
  const deadlineMs = Math.min(Date.now() + (options.retryWindowMs ?? RELAY_RETRY_WINDOW_MS), txData.expiry * 1000);
  for (;;) {
    trace.attempts += 1;
    try {
      return await relayOnce(ctx, { request, chain, queue, options, trace });
    } catch (err) {
      const later = err instanceof RouterError && RETRIED_REFUSALS.has(err.code);
      if (!later || signal.aborted || Date.now() + intervalMs > deadlineMs) {
        throw err;
      }
    }
    await abortableDelay(intervalMs, signal);
  }
}

/** One try: an existing job's hash, or the transfer and fee checks, then the job's broadcast. */
async function relayOnce(
  ctx: AuctionContext,
  p: {
    request: FulfillMetaTx;
    chain: ChainConfig;
    queue: Queue;
    options: RelayOptions;
    trace: RelayTrace;
  },
): Promise<RelayOutcome> {
  const { request, chain, queue, options } = p;
  const { txData } = request;
  const jobId = txJobId(TX_JOB.relayFulfill, transferKey(txData.transactionId, txData.user));
  const waitParams = {
    queue,
    jobId,
    timeoutMs: options.broadcastTimeoutMs ?? RELAY_BROADCAST_TIMEOUT_MS,
    pollIntervalMs: options.pollIntervalMs ?? RELAY_POLL_INTERVAL_MS,
  };
  const existing = await queueCall(() => queue.getJob(jobId));
  const failedUnsigned = existing
    ? await queueCall(() => failedWithNothingSigned(ctx, request.chainId, existing))
    : false;
  if (existing && !failedUnsigned) {
    const outcome = await waitFor(waitParams);
    return { transactionHash: outcome.transactionHash, chainId: request.chainId, jobId, existing: true };
  }

  p.trace.source = await checkRelayedTransfer(ctx, request);
  const fee = decideRelayFee(ctx, chain, request);
  const data: RelayFulfillJobData = {
    chainId: request.chainId,
    txData,
    relayerFee: request.relayerFee,
    signature: request.signature,
    callData: request.callData,
    ...(options.requestId === undefined ? {} : { requestId: options.requestId }),
  };
  // A concurrent request for the same transfer adds under the same id: BullMQ keeps the first job. A failed job
  // with nothing signed runs again, with the data it was enqueued with (the submitter re-checks all of it).
  const enqueue = existing
    ? (): Promise<unknown> => queueCall(() => retryFailed(existing))
    : (): Promise<unknown> =>
        queueCall(() => queue.add(TX_JOB.relayFulfill, data, txJobOptions(TX_JOB.relayFulfill, jobId)));
  p.trace.retriedFailedJob = existing !== undefined;
  const outcome = await waitFor({ ...waitParams, enqueue });
  return {
    transactionHash: outcome.transactionHash,
    chainId: request.chainId,
    jobId,
    existing: false,
    expectedFee: fee.expectedFee.toString(),
  };
}

/**
 * A failed relay job is the chain's final word only when something was signed for it: its transaction reverted,
 * or it may still be mined (the nonce-gap filler sends stored transactions). A failure before any transaction
 * record (attempts spent on an RPC outage, a fee the gas price did not cover then, a provider behind the auction's)
 * is not: the transfer may be asked again, or relaying would end for good after one bad minute.
 */
async function failedWithNothingSigned(ctx: AuctionContext, chainId: number, job: Job): Promise<boolean> {
  if (!job.id || !(await job.isFailed())) {
    return false;
  }
  return (await ctx.redis.exists(txRecordKey(ctx.config.redisPrefix, chainId, job.id))) === 0;
}

/** Back to waiting with fresh attempts, if it is still failed: a concurrent request may have retried it already. */
async function retryFailed(job: Job): Promise<void> {
  try {
    await job.retry("failed", { resetAttemptsMade: true, resetAttemptsStarted: true });
  } catch (err) {
    if (await job.isFailed()) {
      throw err;
    }
  }
}

function assertUserSignature(request: FulfillMetaTx): void {
  const { txData } = request;
  const check = checkUserFulfillSignature({ txData, relayerFee: request.relayerFee, signature: request.signature });
  if (!check.ok) {
    throw new InvalidFulfillSignatureError(
      check.reason === "malformed"
        ? "the fulfill signature is malformed"
        : "the fulfill signature is not the user's for this relayer fee",
      { transactionId: txData.transactionId, chainId: request.chainId },
    );
  }
}

/** The shared wait, with its outcomes as relay errors; a no-op job relayed nothing (the side was already completed). */
async function waitFor(params: WaitForBroadcastParams): Promise<BroadcastOutcome> {
  const { jobId } = params;
  const outcome = await waitForBroadcastAs(params, {
    timedOut: (err) => new RelayBroadcastTimeoutError(err.message, { jobId }, { cause: err }),
    failed: (err) => new RelayFailedError(err.message, { jobId }, { cause: err }),
  });
  if (outcome.noop) {
    throw new RelayFailedError("nothing was relayed: the receiving side was already fulfilled or cancelled on chain", {
      jobId,
    });
  }
  return outcome;
}

function queueCall<T>(call: () => Promise<T>): Promise<T> {
  return boundedQueueCall(
    call,
    (err) => new RelayQueueUnavailableError("the transaction queue did not answer in time", {}, { cause: err }),
  );
}

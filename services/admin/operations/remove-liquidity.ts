import type { Job, Queue, QueueEvents } from "bullmq";
import type { Logger } from "../../../shared/logging/create-logger";
import { TX_JOB, TX_JOB_DEFAULTS, txJobId, type RemoveLiquidityJobData } from "../../../shared/queues";
import type { OperationContext, RemoveLiquidityRequest, TransactionResponse } from "../types";
import { DEFAULT_BROADCAST_TIMEOUT_MS, enqueueAndWaitForBroadcast, queueCall, withTimeout } from "./enqueue-and-wait";
import { BalanceUnavailableError, InsufficientLiquidityError, RequestIdConflictError } from "./errors";

export { DEFAULT_BROADCAST_TIMEOUT_MS } from "./enqueue-and-wait";
const BALANCE_READ_TIMEOUT_MS = 10_000;

export interface RemoveLiquidityDeps {
  queueFor(chainId: number): Queue;
  queueEventsFor(chainId: number): QueueEvents;
  /** The router's unlocked liquidity in the TransactionManager, base units. */
  readUnlockedBalance(chainId: number, assetId: string): Promise<bigint>;
  /** How long a request waits for the submitter's broadcast; 30 s by default. */
  broadcastTimeoutMs?: number;
  logger: Logger;
}

export type RemoveLiquidityOperation = (
  params: RemoveLiquidityRequest,
  ctx: OperationContext,
) => Promise<TransactionResponse>;

/**
 * Checks the unlocked balance, enqueues one remove-liquidity job keyed by the request id, and answers with
 * the transaction hash as soon as the submitter reports the broadcast (never waiting for confirmations).
 * A retry with the same request id finds the same job and waits on it instead of enqueuing again.
 */
export function createRemoveLiquidityOperation(deps: RemoveLiquidityDeps): RemoveLiquidityOperation {
  const timeoutMs = deps.broadcastTimeoutMs ?? DEFAULT_BROADCAST_TIMEOUT_MS;
  return async (params, ctx) => {
    const jobId = txJobId(TX_JOB.removeLiquidity, ctx.requestId);
    const data: RemoveLiquidityJobData = { ...params, requestId: ctx.requestId };
    const queue = deps.queueFor(params.chainId);
    const logger = deps.logger.child({ requestId: ctx.requestId, jobId, chainId: params.chainId });

    const existing = await queueCall(() => queue.getJob(jobId));
    if (existing) {
      assertSameRequest(existing, data, jobId);
      logger.info("remove-liquidity retried: waiting on the existing job", { at: "admin.removeLiquidity" });
    } else {
      await assertUnlockedBalance(deps, params);
    }
    const { transactionHash } = await enqueueAndWaitForBroadcast({
      queue,
      events: deps.queueEventsFor(params.chainId),
      jobId,
      timeoutMs,
      enqueue: existing
        ? undefined
        : () => queueCall(() => queue.add(TX_JOB.removeLiquidity, data, { ...TX_JOB_DEFAULTS, jobId })),
    });
    logger.info("remove-liquidity broadcast", {
      at: "admin.removeLiquidity",
      transactionHash,
      assetId: params.assetId,
      amount: params.amount,
      recipientAddress: params.recipientAddress,
    });
    return { transactionHash };
  };
}

async function assertUnlockedBalance(deps: RemoveLiquidityDeps, params: RemoveLiquidityRequest): Promise<void> {
  let unlocked: bigint;
  try {
    unlocked = await withTimeout(deps.readUnlockedBalance(params.chainId, params.assetId), BALANCE_READ_TIMEOUT_MS);
  } catch (err) {
    throw new BalanceUnavailableError(
      `could not read the router's unlocked balance on chain ${params.chainId}`,
      { chainId: params.chainId, assetId: params.assetId },
      { cause: err },
    );
  }
  const amount = BigInt(params.amount);
  if (unlocked < amount) {
    throw new InsufficientLiquidityError(
      `unlocked balance ${unlocked.toString()} is below the requested amount ${amount.toString()}`,
      { chainId: params.chainId, assetId: params.assetId, unlocked: unlocked.toString(), amount: amount.toString() },
    );
  }
}

function assertSameRequest(job: Job, data: RemoveLiquidityJobData, jobId: string): void {
  const existing = job.data as Partial<RemoveLiquidityJobData>;
  const same = (Object.keys(data) as Array<keyof RemoveLiquidityJobData>).every((key) => existing[key] === data[key]);
  if (!same) {
    throw new RequestIdConflictError(
      "this request id was already used for a different remove-liquidity request; use a new X-Request-Id",
      { jobId },
    );
  }
}

import { createHash } from "node:crypto";
import { withTimeout } from "../../../shared/timing";
import { waitForBroadcast } from "../../../shared/queues/wait-for-broadcast";
import type { Job, Queue, QueueEvents } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "../../../shared/logging/create-logger";
import {
  TX_JOB,
  txJobOptions,
  removeLiquidityContentKey,
  txJobId,
  type RemoveLiquidityJobData,
} from "../../../shared/queues";
import { txRecordStatus } from "../../../shared/queues/in-flight";
import type { ReplicationGuard } from "../../../shared/queues/replication";
import type { OperationContext, RemoveLiquidityRequest, TransactionResponse } from "../types";
import { DEFAULT_BROADCAST_TIMEOUT_MS, QUEUE_CALL_TIMEOUT_MS, queueCall } from "./enqueue-and-wait";
import { BalanceUnavailableError, InsufficientLiquidityError, RequestIdConflictError } from "./errors";

export { DEFAULT_BROADCAST_TIMEOUT_MS } from "./enqueue-and-wait";
const BALANCE_READ_TIMEOUT_MS = 10_000;

/**
 * Identical requests (chain, asset, amount, recipient) within this long of an accepted one are the same
 * withdrawal, whatever their X-Request-Id: a client retrying after a 504 without the header must not withdraw
 * twice. A deliberate second identical withdrawal waits this long (docs/admin-api.md).
 */
export const REMOVE_LIQUIDITY_WINDOW_MS = 10 * 60_000;
/** A content claim younger than this whose job does not exist yet may be a request still checking its balance. */
const CLAIM_SETTLE_MS = BALANCE_READ_TIMEOUT_MS + 2 * QUEUE_CALL_TIMEOUT_MS;

// Replaces the content claim only if it still names the job we judged (failed or never enqueued).
const TAKE_OVER_SCRIPT = `
if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3]) return 1 end
return 0
`;
const RELEASE_SCRIPT = `
if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end
return 0
`;

export interface RemoveLiquidityDeps {
  queueFor(chainId: number): Queue;
  queueEventsFor(chainId: number): QueueEvents;
  /** The router's unlocked liquidity in the TransactionManager, base units. */
  readUnlockedBalance(chainId: number, assetId: string): Promise<bigint>;
  /** For the content claims (removeLiquidityContentKey), under the deployment's `redisPrefix`. */
  readonly redis: Pick<Redis, "set" | "get" | "pttl" | "eval" | "hget">;
  readonly redisPrefix: string;
  /**
   * redis.minReplicas > 0: the replica wait on `redis` (shared/queues/replication.ts). The content claim is on
   * that many replicas before the job is enqueued; otherwise 503 REDIS_NOT_REPLICATED and nothing is enqueued.
   */
  readonly replication?: ReplicationGuard;
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
 * Idempotent twice over:
 * - a retry with the same request id finds the same job and waits on it instead of enqueuing again;
 * - a request identical in content to one accepted in the last REMOVE_LIQUIDITY_WINDOW_MS (any request id,
 *   e.g. a retry after a 504 without X-Request-Id) is answered by that job (claimContent), unless it failed with
 *   nothing on chain (no send record, or its transaction reverted).
 */
export function createRemoveLiquidityOperation(deps: RemoveLiquidityDeps): RemoveLiquidityOperation {
  const timeoutMs = deps.broadcastTimeoutMs ?? DEFAULT_BROADCAST_TIMEOUT_MS;
  return async (params, ctx) => {
    const jobId = txJobId(TX_JOB.removeLiquidity, ctx.requestId);
    const data: RemoveLiquidityJobData = { ...params, requestId: ctx.requestId };
    const queue = deps.queueFor(params.chainId);
    const logger = deps.logger.child({ requestId: ctx.requestId, jobId, chainId: params.chainId });

    const existing = await queueCall(() => queue.getJob(jobId));
    let waitOn = jobId;
    if (existing) {
      assertSameRequest(existing, data, jobId);
      logger.info("remove-liquidity retried: waiting on the existing job", { at: "admin.removeLiquidity" });
    } else {
      const since = deps.replication?.mark() ?? 0;
      const twin = await queueCall(() => claimContent(deps, queue, params, jobId));
      if (twin !== undefined) {
        waitOn = twin;
        logger.info(
          "identical remove-liquidity accepted within the window: answering with that job, enqueuing nothing",
          {
            at: "admin.removeLiquidity",
            twinJobId: twin,
            windowMs: REMOVE_LIQUIDITY_WINDOW_MS,
          },
        );
      } else {
        await assertUnlockedBalance(deps, params)
          // A claim a failover could forget would let an identical retry withdraw a second time.
          .then(() => deps.replication?.ensure(since))
          .catch(async (err: unknown) => {
            // Nothing enqueued: an identical request may go ahead at once.
            await queueCall(() => releaseContent(deps, params, jobId)).catch(() => undefined);
            throw err;
          });
      }
    }
    const { transactionHash } = await waitForBroadcast({
      queue,
      events: deps.queueEventsFor(params.chainId),
      jobId: waitOn,
      timeoutMs,
      enqueue:
        existing || waitOn !== jobId
          ? undefined
          : () => queueCall(() => queue.add(TX_JOB.removeLiquidity, data, txJobOptions(TX_JOB.removeLiquidity, jobId))),
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

/** sha256 of the request's content, normalised (checksummed addresses, decimal amount) by the schema. */
function contentHash(params: RemoveLiquidityRequest): string {
  const content = [
    params.chainId,
    params.assetId.toLowerCase(),
    params.amount,
    params.recipientAddress.toLowerCase(),
  ].join("|");
  return createHash("sha256").update(content).digest("hex");
}

function contentKeyOf(deps: RemoveLiquidityDeps, params: RemoveLiquidityRequest): string {
  return removeLiquidityContentKey(deps.redisPrefix, contentHash(params));
}

/**
 * Claims the request's content for `jobId` for REMOVE_LIQUIDITY_WINDOW_MS (SET NX); returns undefined when
 * claimed, else the job id of the identical request accepted before. That earlier job is taken over (this
 * request then proceeds) only if it failed with nothing on chain, or never got enqueued although its claim is
 * older than a balance check can take. A failed job with a transaction that is sending or confirmed may have paid:
 * the request is answered by it (a second withdrawal would pay twice).
 */
async function claimContent(
  deps: RemoveLiquidityDeps,
  queue: Queue,
  params: RemoveLiquidityRequest,
  jobId: string,
): Promise<string | undefined> {
  const { redis } = deps;
  const key = contentKeyOf(deps, params);
  for (let tries = 0; tries < 3; tries += 1) {
    if ((await redis.set(key, jobId, "PX", REMOVE_LIQUIDITY_WINDOW_MS, "NX")) === "OK") {
      return undefined;
    }
    const other = await redis.get(key);
    if (other === null) {
      continue;
    }
    if (other === jobId) {
      return undefined;
    }
    const job = await queue.getJob(other);
    if (
      job
        ? !(await failedWithNothingOnChain(deps, job, params.chainId))
        : REMOVE_LIQUIDITY_WINDOW_MS - (await redis.pttl(key)) < CLAIM_SETTLE_MS
    ) {
      return other;
    }
    if (Number(await redis.eval(TAKE_OVER_SCRIPT, 1, key, other, jobId, REMOVE_LIQUIDITY_WINDOW_MS)) === 1) {
      return undefined;
    }
  }
  throw new Error("the remove-liquidity content claim kept changing");
}

async function failedWithNothingOnChain(deps: RemoveLiquidityDeps, job: Job, chainId: number): Promise<boolean> {
  if (!job.id || !(await job.isFailed())) {
    return false;
  }
  const status = await txRecordStatus(deps.redis, deps.redisPrefix, chainId, job.id);
  return status === undefined || status === "reverted";
}

async function releaseContent(deps: RemoveLiquidityDeps, params: RemoveLiquidityRequest, jobId: string): Promise<void> {
  await deps.redis.eval(RELEASE_SCRIPT, 1, contentKeyOf(deps, params), jobId);
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

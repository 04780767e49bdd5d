import { createHash } from "node:crypto";
import type { Job, Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { TxJobName } from "../../../shared/queues";
import { adminRequestContentKey } from "../../../shared/coordination/keys";
import { txRecordStatus } from "../../../shared/coordination/in-flight";
import type { ReplicationGuard } from "../../../shared/coordination/replication";
import type { Logger } from "../../../shared/logging/create-logger";
import { DELETE_IF_EQUAL } from "../../../shared/redis/common-scripts";
import { defineScript, reply, type ScriptClient } from "../../../shared/redis/script-runner";
import { QUEUE_CALL_TIMEOUT_MS, queueCall } from "./enqueue-and-wait";

/**
 * Identical money requests (a withdrawal, a deposit) within this long of an accepted one are the same request,
 * whatever their X-Request-Id: a client retrying after a 504 without the header must not move the money twice.
 * A deliberate second identical request waits this long (docs/admin-api.md).
 */
export const CONTENT_CLAIM_WINDOW_MS = 10 * 60_000;

/** The chain reads a request makes before it enqueues (balance, approvals), bounded by each operation. */
export const PRE_ENQUEUE_READ_TIMEOUT_MS = 10_000;

/** A claim younger than this whose job does not exist yet may be a request still reading the chain. */
const CLAIM_SETTLE_MS = PRE_ENQUEUE_READ_TIMEOUT_MS + 2 * QUEUE_CALL_TIMEOUT_MS;

/** Replaces the claim only if it still names the job we judged (failed with nothing on chain, or never enqueued). */
const TAKE_OVER = defineScript({
  file: "replace-if-equal",
  keys: ["target"],
  args: ["expected", "value", "ttlMs"],
  decode: reply.flag,
});

export interface ContentClaimDeps {
  readonly redis: Pick<Redis, "set" | "get" | "pttl" | "hget"> & ScriptClient;
  readonly redisPrefix: string;
  /**
   * redis.minReplicas > 0: the replica wait on `redis` (shared/coordination/replication.ts). The content claim is on
   * that many replicas before the job is enqueued; otherwise 503 REDIS_NOT_REPLICATED and nothing is enqueued.
   */
  readonly replication?: ReplicationGuard;
}

/** One request's content claim: the job it is claimed for, under the key its normalised fields hash to. */
export interface ContentClaim {
  readonly kind: TxJobName;
  readonly chainId: number;
  /** The request's fields, normalised by the schema (checksummed addresses, decimal amounts), in a fixed order. */
  readonly fields: ReadonlyArray<string | number>;
  readonly jobId: string;
}

function keyOf(deps: ContentClaimDeps, claim: ContentClaim): string {
  const content = claim.fields.map((f) => String(f).toLowerCase()).join("|");
  return adminRequestContentKey(deps.redisPrefix, claim.kind, createHash("sha256").update(content).digest("hex"));
}

/**
 * Claims the request's content for its job for CONTENT_CLAIM_WINDOW_MS (SET NX). Returns undefined when claimed,
 * else the job id of the identical request accepted before, which answers this one. That earlier job is taken
 * over (this request then proceeds) only if it failed with nothing on chain, or never got enqueued although its
 * claim is older than the pre-enqueue reads can take. A failed job whose transaction is sending or confirmed may
 * have moved the money: the request is answered by it.
 */
export async function claimContent(
  deps: ContentClaimDeps,
  queue: Queue,
  claim: ContentClaim,
): Promise<string | undefined> {
  const { redis } = deps;
  const key = keyOf(deps, claim);
  for (let tries = 0; tries < 3; tries += 1) {
    if ((await redis.set(key, claim.jobId, "PX", CONTENT_CLAIM_WINDOW_MS, "NX")) === "OK") {
      return undefined;
    }
    const other = await redis.get(key);
    if (other === null) {
      continue;
    }
    if (other === claim.jobId) {
      return undefined;
    }
    const job = await queue.getJob(other);
    if (
      job
        ? !(await failedWithNothingOnChain(deps, job, claim.chainId))
        : CONTENT_CLAIM_WINDOW_MS - (await redis.pttl(key)) < CLAIM_SETTLE_MS
    ) {
      return other;
    }
    const call = {
      keys: { target: key },
      args: { expected: other, value: claim.jobId, ttlMs: CONTENT_CLAIM_WINDOW_MS },
    };
    if (await TAKE_OVER.run(redis, call)) {
      return undefined;
    }
  }
  throw new Error(`the ${claim.kind} content claim kept changing`);
}

/** Drops the claim if it is still this request's: nothing was enqueued, so an identical request may go at once. */
export async function releaseContent(deps: ContentClaimDeps, claim: ContentClaim): Promise<void> {
  await DELETE_IF_EQUAL.run(deps.redis, { keys: { target: keyOf(deps, claim) }, args: { expected: claim.jobId } });
}

async function failedWithNothingOnChain(deps: ContentClaimDeps, job: Job, chainId: number): Promise<boolean> {
  if (!job.id || !(await job.isFailed())) {
    return false;
  }
  const status = await txRecordStatus(deps.redis, deps.redisPrefix, chainId, job.id);
  return status === undefined || status === "reverted";
}

/**
 * A money request's content claim, as both operations take it: claims the content, or answers with the job of an
 * identical request accepted within the window (returned: the job to wait on, nothing to enqueue). When claimed,
 * `check` (the chain reads before enqueuing) must pass and the claim must reach the replicas: a claim a failover
 * could forget would let an identical retry move the money a second time. If either fails, the claim is dropped
 * (nothing was enqueued, so an identical request may go at once) and the error thrown.
 */
export async function claimOrJoin(
  deps: ContentClaimDeps,
  queue: Queue,
  claim: ContentClaim,
  check: () => Promise<void>,
  log: { readonly logger: Logger; readonly at: string },
): Promise<string | undefined> {
  const since = deps.replication?.mark() ?? 0;
  const twin = await queueCall(() => claimContent(deps, queue, claim));
  if (twin !== undefined) {
    log.logger.info(`identical ${claim.kind} accepted within the window: answering with that job, enqueuing nothing`, {
      at: log.at,
      twinJobId: twin,
      windowMs: CONTENT_CLAIM_WINDOW_MS,
    });
    return twin;
  }
  await check()
    .then(() => deps.replication?.ensure(since))
    .catch(async (err: unknown) => {
      await queueCall(() => releaseContent(deps, claim)).catch(() => undefined);
      throw err;
    });
  return undefined;
}

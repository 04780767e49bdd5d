import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { RequestHandler } from "express";
import { retryRefusal } from "../../../shared/metrics/retry-safety";
import { AdminApiError } from "../errors";

/**
 * The dashboard's write routes, allowed one by one in front of bull-board: its API offers far more than
 * the actions docs/operating.md lists (add a job with any name and data, update a job's data, empty,
 * obliterate, pause all...), and a job added there would skip every check of the admin API. Paths are
 * matched as bull-board's Express router matches them: case-insensitive, an optional trailing slash, the
 * bulk forms (`/:queue/retry/:status`, `/:queue/clean/:status`) before the per-job ones, as bull-board
 * registers them. What is not allowed here never reaches bull-board.
 */
type DashboardWrite =
  | { kind: "retry-job"; queue: string; jobId: string }
  | { kind: "clean-job"; queue: string; jobId: string }
  | { kind: "promote-job"; queue: string; jobId: string }
  | { kind: "clean-all"; queue: string; status: string }
  | { kind: "promote-all"; queue: string }
  | { kind: "other" };

/** Bulk clean only of finished jobs: removing waiting or delayed lifecycle jobs is not a documented action. */
const CLEANABLE_IN_BULK = new Set(["completed", "failed"]);

const SEGMENT = "([^/]+)";
const BULK_RETRY = new RegExp(`^/api/queues/${SEGMENT}/retry/${SEGMENT}/?$`, "i");
const BULK_CLEAN = new RegExp(`^/api/queues/${SEGMENT}/clean/${SEGMENT}/?$`, "i");
const BULK_PROMOTE = new RegExp(`^/api/queues/${SEGMENT}/promote/?$`, "i");
const JOB_ACTION = new RegExp(`^/api/queues/${SEGMENT}/${SEGMENT}/(retry|clean|promote)/?$`, "i");

function classify(method: string, path: string): DashboardWrite {
  if (method !== "PUT" || BULK_RETRY.test(path)) {
    return { kind: "other" };
  }
  const bulkClean = BULK_CLEAN.exec(path);
  if (bulkClean) {
    return { kind: "clean-all", queue: decode(bulkClean[1]), status: decode(bulkClean[2]) };
  }
  const bulkPromote = BULK_PROMOTE.exec(path);
  if (bulkPromote) {
    return { kind: "promote-all", queue: decode(bulkPromote[1]) };
  }
  const job = JOB_ACTION.exec(path);
  if (job) {
    const action = job[3].toLowerCase() as "retry" | "clean" | "promote";
    return { kind: `${action}-job`, queue: decode(job[1]), jobId: decode(job[2]) };
  }
  return { kind: "other" };
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Reads pass; with `actions` off every write is 405; with it on, only retry (of a failed job whose effect
 * is not on chain: retryRefusal), clean (one job, or every completed or failed job) and promote pass.
 */
export function dashboardGuard(params: {
  actions: boolean;
  queues: readonly Queue[];
  redis: Redis;
  redisPrefix: string;
}): RequestHandler {
  const queuesByName = new Map(params.queues.map((queue) => [queue.name, queue]));
  return (req, res, next) => {
    if (req.method === "GET" || req.method === "HEAD") {
      next();
      return;
    }
    if (!params.actions) {
      res.setHeader("Allow", "GET, HEAD");
      next(new AdminApiError("METHOD_NOT_ALLOWED", "the dashboard is read-only (dashboardActions is off)"));
      return;
    }
    const write = classify(req.method, req.path);
    if (write.kind === "other" || (write.kind === "clean-all" && !CLEANABLE_IN_BULK.has(write.status))) {
      next(
        new AdminApiError(
          "DASHBOARD_ACTION_REFUSED",
          "the dashboard allows only retry of a failed job, clean and promote; other queue changes go through the admin API or npm run queues",
        ),
      );
      return;
    }
    if (write.kind !== "retry-job") {
      next();
      return;
    }
    const queue = queuesByName.get(write.queue);
    if (!queue) {
      next();
      return;
    }
    checkRetry(queue, write.jobId, params.redis, params.redisPrefix).then(() => next(), next);
  };
}

async function checkRetry(queue: Queue, jobId: string, redis: Redis, redisPrefix: string): Promise<void> {
  const job = await queue.getJob(jobId);
  if (!job) {
    return;
  }
  const refusal = await retryRefusal(redis, redisPrefix, job);
  if (refusal) {
    throw new AdminApiError("RETRY_REFUSED", `refused to retry ${jobId}: ${refusal}`);
  }
}

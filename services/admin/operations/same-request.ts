import type { Job } from "bullmq";
import { RequestIdConflictError } from "./errors";

/**
 * A job found under a request's deterministic id must carry the same data: a reused X-Request-Id with other
 * fields is a new request, answered 409 instead of with the first one's transaction.
 */
export function assertSameJobData<T extends object>(job: Job, data: T, jobId: string, what: string): void {
  const existing = job.data as Partial<T>;
  const same = (Object.keys(data) as Array<keyof T>).every((key) => existing[key] === data[key]);
  if (!same) {
    throw new RequestIdConflictError(
      `this request id was already used for a different ${what} request; use a new X-Request-Id`,
      { jobId },
    );
  }
}

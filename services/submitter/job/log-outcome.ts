import type { Logger } from "../../../shared/logging/create-logger";
import type { SubmitterContext } from "../context";
import type { SendTrace } from "../send/send-context";

/** The job's outcome as its log line names it. */
export type LoggedOutcome = "completed" | "retry" | "failed" | "handover" | "delayed";

/** What an outcome line reports besides the outcome: the run's trace and timing, and the error if any. */
export interface OutcomeLine {
  readonly ctx: SubmitterContext;
  readonly trace: SendTrace;
  readonly startedAtMs: number;
  readonly code?: string;
  readonly error?: string;
  readonly noop?: boolean;
  readonly retryAtMs?: number;
}

/** The one outcome line of a job's attempt: info when it ends well, warn on a retry, error on a failure. */
export function logOutcome(logger: Logger, outcome: LoggedOutcome, p: OutcomeLine): void {
  const fields = {
    at: "submitter.job",
    chainId: p.ctx.chainId,
    outcome,
    transactionHash: p.trace.transactionHash,
    nonce: p.trace.nonce,
    bumps: p.trace.bumps,
    noop: p.noop,
    retryAtMs: p.retryAtMs,
    code: p.code,
    error: p.error,
    durationMs: Date.now() - p.startedAtMs,
  };
  const level = outcome === "failed" ? "error" : outcome === "retry" ? "warn" : "info";
  logger[level]("job outcome", fields);
}

import type { Job } from "bullmq";
import type { Logger } from "../../../shared/logging/create-logger";
import type { TxJobData, TxJobResult } from "../../../shared/queues";
import type { SubmitterContext } from "../context";
import type { SendTrace } from "../send/send-context";

/** A job of the submitter's queue, as BullMQ hands it to the processor. */
export type TxJob = Job<TxJobData, TxJobResult, string>;

/** A run of a job that ended in an error: what deciding and applying its outcome needs. */
export interface FailedRun {
  readonly err: unknown;
  readonly job: TxJob;
  /** The run's lock token; without it the job cannot be moved (parked or handed back). */
  readonly token?: string;
  /** The job's logger (its id, name and request id on every line). */
  readonly logger: Logger;
  readonly ctx: SubmitterContext;
  readonly trace: SendTrace;
  readonly startedAtMs: number;
}

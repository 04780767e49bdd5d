import { RouterError } from "../../shared/errors";

/** A program the local stack needs is not installed; the message is one line naming what to install. */
export class MissingBinaryError extends RouterError {
  readonly code = "LOCAL_BINARY_MISSING";
  readonly retriable = false;
}

/** A local service exited or never answered its readiness probe; `logFile` holds its output. */
export class LocalServiceError extends RouterError {
  readonly code = "LOCAL_SERVICE_FAILED";
  readonly retriable = false;
  readonly logFiles: readonly string[];

  constructor(message: string, logFiles: readonly string[], context: Record<string, unknown> = {}) {
    super(message, context);
    this.logFiles = logFiles;
  }
}

/** One step of `npm run local` failed; names the step and the log files of the process at fault. */
export class StepFailedError extends RouterError {
  readonly code = "LOCAL_STEP_FAILED";
  readonly retriable = false;
  readonly step: string;
  readonly logFiles: readonly string[];

  constructor(step: string, cause: unknown, logFiles: readonly string[]) {
    super(`${step} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { step }, { cause });
    this.step = step;
    this.logFiles = logFiles;
  }
}

/** No receipt for a transaction within the bound: names the transaction, what sent it and the chain. */
export class ReceiptTimeoutError extends RouterError {
  readonly code = "LOCAL_RECEIPT_TIMEOUT";
  readonly retriable = false;
}

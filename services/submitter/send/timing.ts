import { SubmitterShutdownError } from "./errors";

/** Throws SubmitterShutdownError once the process is shutting down; called only at safe points. */
export function throwIfShuttingDown(signal: AbortSignal): void {
  if (signal.aborted) {
    throw new SubmitterShutdownError("submitter is shutting down; the job goes back to the queue");
  }
}

/** Sleeps `ms`, or less when shutdown starts, which then throws SubmitterShutdownError. */
export async function sleepUnlessShuttingDown(ms: number, signal: AbortSignal): Promise<void> {
  throwIfShuttingDown(signal);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
  throwIfShuttingDown(signal);
}

/** Logs at most once per interval; keeps a provider outage from writing a warning every poll. */
export function createThrottle(intervalMs: number): () => boolean {
  let lastAtMs = 0;
  return () => {
    const nowMs = Date.now();
    if (nowMs - lastAtMs < intervalMs) {
      return false;
    }
    lastAtMs = nowMs;
    return true;
  };
}

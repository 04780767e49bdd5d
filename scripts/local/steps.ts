import { LocalServiceError, StepFailedError } from "./errors";

/**
 * Prints `npm run local`'s progress: one line when a step starts, one when it ends with its duration, and
 * the step's own progress lines in between (a heartbeat every 10 s when a step says nothing), all stamped
 * with the time since the run began. A failure becomes StepFailedError naming the step and the logs to show.
 */
export interface Steps {
  run<T>(
    name: string,
    fn: (progress: (line: string) => void) => Promise<T>,
    logFiles?: () => readonly string[],
  ): Promise<T>;
  print(line: string): void;
  elapsedMs(): number;
}

const HEARTBEAT_MS = 10_000;

export function createSteps(
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
  nowMs: () => number = Date.now,
): Steps {
  const startedAtMs = nowMs();
  const stamp = (): string => `[${((nowMs() - startedAtMs) / 1000).toFixed(1).padStart(5)}s]`;
  return {
    run: async (name, fn, logFiles) => {
      const stepStartMs = nowMs();
      write(`${stamp()} ▶ ${name}`);
      let lastOutputMs = nowMs();
      const progress = (line: string): void => {
        lastOutputMs = nowMs();
        write(`${stamp()}     ${line}`);
      };
      const heartbeat = setInterval(() => {
        if (nowMs() - lastOutputMs >= HEARTBEAT_MS) {
          progress(`… still working (${Math.round((nowMs() - stepStartMs) / 1000)} s)`);
        }
      }, 1_000);
      heartbeat.unref();
      try {
        const value = await fn(progress);
        write(`${stamp()} ✓ ${name} (${((nowMs() - stepStartMs) / 1000).toFixed(1)} s)`);
        return value;
      } catch (err) {
        const files = err instanceof LocalServiceError ? err.logFiles : (logFiles?.() ?? []);
        throw err instanceof StepFailedError ? err : new StepFailedError(name, err, files);
      } finally {
        clearInterval(heartbeat);
      }
    },
    print: write,
    elapsedMs: () => nowMs() - startedAtMs,
  };
}

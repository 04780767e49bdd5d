/** Helpers every benchmark shares (benchmarks start their servers with scripts/local's binaries and probes). */

/** The `q` quantile (0..1) of ascending `sorted` values, nearest-rank; NaN for no values. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Runs a bench's main as the process: exits with its code, or 1 with the error's stack. */
export function runBench(name: string, main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}

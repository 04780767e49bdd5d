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

/** A bench's figures by name (unit in the name), printed as its last line for bench/compare.ts and the CI guard. */
export type BenchFigures = Readonly<Record<string, number>>;

/** Prints `{"bench": name, "figures": {...}}` on one line: the machine-readable end of a bench's output. */
export function printFigures(bench: string, figures: BenchFigures): void {
  process.stdout.write(`${JSON.stringify({ bench, figures })}\n`);
}

/** The figures a bench printed with printFigures (its last such line), if any. */
export function figuresIn(output: string, bench: string): BenchFigures | undefined {
  for (const line of output.trim().split("\n").reverse()) {
    if (!line.startsWith("{")) continue;
    try {
      const parsed = JSON.parse(line) as { bench?: unknown; figures?: unknown };
      if (parsed.bench === bench && typeof parsed.figures === "object" && parsed.figures !== null) {
        return parsed.figures as BenchFigures;
      }
    } catch {
      // Not a figures line.
    }
  }
  return undefined;
}

import { withTimeout } from "../timing";

/**
 * A named readiness condition; resolves to a short detail on failure (or throws), nothing when fine, or
 * `{ ok: true, detail }` when fine but worth showing (a standby's role).
 */
export type ReadinessCheck = () => Promise<ReadinessVerdict> | ReadinessVerdict;
export type ReadinessVerdict = string | undefined | { readonly ok: true; readonly detail: string };

export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail?: string;
}

export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: readonly CheckResult[];
}

/** A check slower than this counts as failed: a scrape or probe must not hang on a dead dependency. */
export const CHECK_TIMEOUT_MS = 1_000;

export interface Readiness {
  add(name: string, check: ReadinessCheck): void;
  evaluate(): Promise<ReadinessReport>;
}

/**
 * The conditions /readyz reports (k8s readiness semantics): Redis for every process, plus what each service
 * adds (messaging for the auction, providers within lag for pollers and submitters). Liveness (/healthz) never
 * depends on them, so a Redis blip makes processes unready, never restarted.
 */
export function createReadiness(): Readiness {
  const checks = new Map<string, ReadinessCheck>();
  return {
    add: (name, check) => {
      checks.set(name, check);
    },
    evaluate: async () => {
      const results = await Promise.all(
        [...checks].map(async ([name, check]): Promise<CheckResult> => {
          try {
            const detail = await withTimeout(Promise.resolve(check()), CHECK_TIMEOUT_MS);
            if (typeof detail === "object") {
              return { name, ok: true, detail: detail.detail };
            }
            return detail === undefined ? { name, ok: true } : { name, ok: false, detail };
          } catch (err) {
            return { name, ok: false, detail: err instanceof Error ? err.message : String(err) };
          }
        }),
      );
      return { ready: results.every((r) => r.ok), checks: results };
    },
  };
}

import { LEDGER_DEFAULTS } from "./defaults";
import type { LedgerConfig } from "./types";

/** A `ledger` section with its defaults (also for tools and tests that add the section to a loaded config). */
export function ledgerWithDefaults(ledger: Partial<LedgerConfig> & { databaseUrl: string }): LedgerConfig {
  return {
    databaseUrl: ledger.databaseUrl,
    concurrency: ledger.concurrency ?? LEDGER_DEFAULTS.concurrency,
    receiptRetryDelayMs: ledger.receiptRetryDelayMs ?? LEDGER_DEFAULTS.receiptRetryDelayMs,
    receiptAttempts: ledger.receiptAttempts ?? LEDGER_DEFAULTS.receiptAttempts,
    repriceIntervalMs: ledger.repriceIntervalMs ?? LEDGER_DEFAULTS.repriceIntervalMs,
    reconcileIntervalMs: ledger.reconcileIntervalMs ?? LEDGER_DEFAULTS.reconcileIntervalMs,
    poolSize: ledger.poolSize ?? LEDGER_DEFAULTS.poolSize,
  };
}

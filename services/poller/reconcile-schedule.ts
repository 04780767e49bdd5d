/** Scheduled reconcile of every open record of the chain (besides the first tick, a rewind and each cancel). */
export const DEFAULT_RECONCILE_INTERVAL_MS = 60_000;
/** A side the store has never seen is searched for this far back from its chain's head. */
export const DEFAULT_RECONCILE_SEARCH_BLOCKS = 100_000;

/**
 * When every open record is reconciled, and which transfers stay on hold because their store view disagrees
 * with the contract in a way the poller cannot repair. Per process: the first tick of every process
 * reconciles everything, so nothing here needs to survive a restart.
 */
export interface ReconcileSchedule {
  allDue(nowMs: number): boolean;
  allDone(nowMs: number): void;
  /** After a re-org rewind or a chain reset: the next tick reconciles every open record. */
  requestAll(): void;
  onHold(transferKey: string): boolean;
  setOnHold(transferKey: string, hold: boolean): void;
}

export function createReconcileSchedule(intervalMs: number): ReconcileSchedule {
  let lastAllMs: number | undefined;
  let requested = false;
  const held = new Set<string>();
  return {
    allDue: (nowMs) => requested || lastAllMs === undefined || nowMs - lastAllMs >= intervalMs,
    allDone: (nowMs) => {
      lastAllMs = nowMs;
      requested = false;
    },
    requestAll: () => {
      requested = true;
    },
    onHold: (key) => held.has(key),
    setOnHold: (key, hold) => void (hold ? held.add(key) : held.delete(key)),
  };
}

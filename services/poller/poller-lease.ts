import { errorCode, errorMessage } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import { abortableDelay } from "../../shared/timing";
import type { Fence, Lease } from "../../shared/queues/lease";

export type PollerRole = "active" | "standby";

/**
 * Takeover bound when the active poller dies without releasing the lease (SIGKILL, a lost host): a standby or
 * the restarted process polls again within about TTL + TTL/4 + one tick, about 4 s, which keeps a SIGKILLed
 * poller's recovery inside issue 12's 5 s target (bench/recovery.ts) and is far inside every transfer's expiry
 * margins. Renewals run every TTL/4 on their own timer, so only an event-loop stall of about 2 s (a tick decoding
 * thousands of logs) loses the lease, and a lost lease costs only a pause and a reconcile of every open record.
 */
export const DEFAULT_POLLER_LEASE_TTL_MS = 3_000;

export interface PollerLeaseKeeperParams {
  readonly lease: Lease;
  readonly logger: Logger;
  /** Renewal (active) and lease polling (standby) period: a quarter of the TTL. */
  readonly intervalMs: number;
  /**
   * Runs the poll loop for one term until `signal` aborts; calls `firstTick` once its first tick is done. A term
   * never begins before the previous one's loop has returned, so one process never runs two loops.
   */
  runTerm(fence: Fence, signal: AbortSignal, firstTick: () => void): Promise<void>;
}

export interface PollerLeaseKeeper {
  /** Resolves at the first decision: active once the term's first tick is done, or standby (lease held elsewhere). */
  start(): Promise<void>;
  role(): PollerRole;
  /** The current term while active. */
  term(): number | undefined;
  /** Stops competing, ends the term (awaits its loop), then releases the lease so a standby takes over at once. */
  stop(): Promise<void>;
}

interface Term {
  readonly fence: Fence;
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

const WARN_INTERVAL_MS = 10_000;

/**
 * One active poller per chain. While this process holds the lease it runs the poll loop and renews the lease
 * every interval, independently of ticks (a slow RPC read never delays a renewal); when a renewal fails or the
 * lease is no longer locally valid it aborts the loop and waits as a standby. A standby renews nothing: it tries
 * to take the lease every interval, which succeeds only once the holder released it or let it lapse.
 */
export function createPollerLeaseKeeper(params: PollerLeaseKeeperParams): PollerLeaseKeeper {
  const { lease, logger } = params;
  let term: Term | undefined;
  let ending: Promise<void> = Promise.resolve();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();
  let warnedAtMs = 0;
  const stopSignal = new AbortController();

  const warn = (message: string, err: unknown): void => {
    if (Date.now() - warnedAtMs >= WARN_INTERVAL_MS) {
      warnedAtMs = Date.now();
      logger.warn(message, { at: "poller.lease", code: errorCode(err), error: errorMessage(err) });
    }
  };

  /** Resolves after the term's first tick (or once its loop returned without one). */
  const beginTerm = (fence: Fence): Promise<void> => {
    const abort = new AbortController();
    let firstTick: () => void = () => undefined;
    const first = new Promise<void>((resolve) => {
      firstTick = resolve;
    });
    const done = params.runTerm(fence, abort.signal, firstTick);
    term = { fence, abort, done };
    logger.info("poller lease acquired: this process polls the chain", {
      at: "poller.lease",
      leaseTerm: fence.term,
      ownerId: fence.ownerId,
    });
    return Promise.race([first, done.catch(() => undefined)]);
  };

  const endTerm = (): Promise<void> => {
    const ending_ = term;
    term = undefined;
    if (ending_) {
      ending_.abort.abort();
      ending = ending_.done
        .catch(() => undefined)
        .then(() => logger.info("poller term ended", { at: "poller.lease", leaseTerm: ending_.fence.term }));
    }
    return ending;
  };

  const tick = async (): Promise<void> => {
    if (term) {
      const renewed = await lease.renew().catch((err: unknown) => {
        warn("cannot renew the poller lease", err);
        return undefined;
      });
      if (term && (renewed === false || !lease.current())) {
        logger.warn("poller lease lost: this process stops ticking and waits as a standby", {
          at: "poller.lease",
          leaseTerm: term.fence.term,
          ownerId: lease.ownerId,
        });
        lease.drop();
        void endTerm();
      }
      return;
    }
    // Never a new term before the previous term's loop has returned.
    await ending;
    if (stopped) {
      return;
    }
    const fence = await lease.tryAcquire().catch((err: unknown) => {
      warn("cannot read the poller lease", err);
      return undefined;
    });
    if (fence && !stopped) {
      // Not awaited: renewals go on while the term's first tick runs.
      void beginTerm(fence);
    }
  };

  const schedule = (): void => {
    if (stopped) {
      return;
    }
    timer = setTimeout(() => {
      ticking = tick().finally(schedule);
    }, params.intervalMs);
  };

  return {
    start: async () => {
      // The first decision needs Redis: while it is unreachable, start keeps waiting (as the loop would).
      while (!stopped) {
        let fence: Fence | undefined;
        try {
          fence = await lease.tryAcquire();
        } catch (err) {
          warn("cannot read the poller lease", err);
          await abortableDelay(params.intervalMs, stopSignal.signal);
          continue;
        }
        const first = fence ? beginTerm(fence) : undefined;
        // Renewals start before the first tick ends: a first sync of many blocks can outlast the TTL.
        schedule();
        await first;
        return;
      }
    },
    role: () => (term ? "active" : "standby"),
    term: () => term?.fence.term,
    stop: async () => {
      stopped = true;
      stopSignal.abort();
      clearTimeout(timer);
      await ticking.catch(() => undefined);
      await endTerm();
      await lease.release().catch((err: unknown) => warn("cannot release the poller lease", err));
    },
  };
}

import type { Logger } from "../../shared/logging/create-logger";
import { abortableDelay } from "../../shared/timing";
import type { Fence, Lease } from "../../shared/coordination/lease";
import { createLeaseLoop } from "../../shared/coordination/lease-loop";

export type PollerRole = "active" | "standby";

/**
 * Takeover bound when the active poller dies without releasing the lease (SIGKILL, a lost host): a standby or
 * the restarted process polls again within about TTL + TTL/4 + one tick, about 4 s, which keeps a SIGKILLed
 * poller's recovery inside the 5 s recovery target (bench/recovery.ts) and is far inside every transfer's expiry
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

/**
 * One active poller per chain. While this process holds the lease it runs the poll loop, and the lease loop
 * (shared/coordination/lease-loop.ts) renews the lease every interval, independently of ticks; when the lease is lost
 * the poll loop is aborted and the process waits as a standby, trying to take the lease every interval.
 */
export function createPollerLeaseKeeper(params: PollerLeaseKeeperParams): PollerLeaseKeeper {
  const { lease, logger } = params;
  let term: Term | undefined;
  let ending: Promise<void> = Promise.resolve();
  const stopSignal = new AbortController();

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

  const loop = createLeaseLoop({
    lease,
    intervalMs: params.intervalMs,
    logger,
    at: "poller.lease",
    leaseName: "poller lease",
    held: () => term?.fence,
    // Never a new term before the previous term's loop has returned.
    mayAcquire: async () => {
      await ending;
      return true;
    },
    // As the sender lease (services/submitter/lease/lease-keeper.ts): a stall nobody used, on the same Redis server,
    // goes on in the same term. A write refused in the lapsed window fails its tick, and the next tick runs again
    // from the stored cursor, as a new term would, without the pause and the reconcile of every open record.
    resumeLapsed: true,
    // Not awaited: renewals go on while the term's first tick runs.
    onAcquired: (fence) => void beginTerm(fence),
    onLost: (fence) => {
      logger.warn("poller lease lost: this process stops ticking and waits as a standby", {
        at: "poller.lease",
        leaseTerm: fence.term,
        ownerId: lease.ownerId,
      });
      void endTerm();
    },
  });

  return {
    start: async () => {
      // The first decision needs Redis: while it is unreachable, start keeps waiting (as the loop would).
      while (!loop.halted()) {
        let fence: Fence | undefined;
        try {
          fence = await lease.tryAcquire();
        } catch (err) {
          loop.warn("cannot read the poller lease", err);
          await abortableDelay(params.intervalMs, stopSignal.signal);
          continue;
        }
        const first = fence ? beginTerm(fence) : undefined;
        // Renewals start before the first tick ends: a first sync of many blocks can outlast the TTL.
        loop.start();
        await first;
        return;
      }
    },
    role: () => (term ? "active" : "standby"),
    term: () => term?.fence.term,
    stop: async () => {
      loop.halt();
      stopSignal.abort();
      await loop.idle();
      await endTerm();
      await lease.release().catch((err: unknown) => loop.warn("cannot release the poller lease", err));
    },
  };
}

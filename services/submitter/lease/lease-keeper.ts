import { setMaxListeners } from "node:events";
import { errorCode, errorMessage } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import { settlesWithin } from "../../../shared/timing";
import { SenderTermStuckError } from "../send/errors";
import { createThrottle } from "../send/timing";
import type { Fence, SenderLease } from "./sender-lease";

export type SenderRole = "sender" | "standby";

export interface LeaseKeeperParams {
  readonly lease: SenderLease;
  readonly logger: Logger;
  /** Renewal and standby polling period (a quarter of the TTL by default). */
  readonly intervalMs: number;
  /** Takes back what the holder owns: nonce reconcile, orphaned jobs, then starts the worker. */
  onBegin(fence: Fence, signal: AbortSignal): Promise<void>;
  /** Stops sending: pauses the worker (its active job was aborted and hands itself back). */
  onEnd(): Promise<void>;
  /** Bound on onEnd; past it the term is stuck (default DEFAULT_END_TIMEOUT_MS). */
  readonly endTimeoutMs?: number;
  /**
   * Called once when a term could not end within its bound: the keeper has stopped for good (no renewals, no
   * new term, not ready), so the lease lapses and a standby or a restarted process takes over.
   */
  onStuck(err: SenderTermStuckError): void;
}

/** Well above a healthy pause (active jobs stop at their next safe point within a poll interval). */
export const DEFAULT_END_TIMEOUT_MS = 10_000;

export interface LeaseKeeper {
  /** Makes the first decision (sender term begun, or standby) before resolving, then keeps ticking. */
  start(): Promise<void>;
  /** The current term's signal (aborted when the term ends); an aborted signal outside a term. */
  signal(): AbortSignal;
  role(): SenderRole;
  /** True once the first decision is made and, as sender, what it owns has been taken back. */
  isReady(): boolean;
  /** Stops ticking and aborts the current term; the caller closes the worker, then calls release(). */
  halt(): void;
  /** Drops the lease in Redis (if still ours), so a standby takes over at once. */
  release(): Promise<void>;
}

const ABORTED = AbortSignal.abort();
const WARN_INTERVAL_MS = 10_000;

/**
 * One loop per process: while it holds the sender lease it renews it every interval; while it does not, it
 * tries to take it. Term changes run one at a time in a chain, so a term never begins before the previous
 * one's job has handed itself back; renewals keep running during a slow begin (RPC reads in the reconcile).
 */
export function createLeaseKeeper(params: LeaseKeeperParams): LeaseKeeper {
  const { lease, logger } = params;
  let holding: Fence | undefined;
  let term: { fence: Fence; abort: AbortController } | undefined;
  let transitions: Promise<void> = Promise.resolve();
  let pending = 0;
  let ready = false;
  let halted = false;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();
  const shouldWarn = createThrottle(WARN_INTERVAL_MS);

  const markReady = (role: SenderRole): void => {
    if (!ready) {
      ready = true;
      logger.info("submitter ready", {
        at: "submitter.ready",
        role,
        ownerId: lease.ownerId,
        leaseTerm: term?.fence.token,
      });
    }
  };
  const enqueue = (what: string, fn: () => Promise<void>): Promise<void> => {
    pending += 1;
    transitions = transitions
      .then(fn)
      .catch((err: unknown) =>
        logger.error("sender term change failed", {
          at: "submitter.lease",
          what,
          code: errorCode(err),
          error: errorMessage(err),
        }),
      )
      .finally(() => {
        pending -= 1;
      });
    return transitions;
  };
  const begin = async (fence: Fence): Promise<void> => {
    if (halted || holding !== fence) {
      return;
    }
    const abort = new AbortController();
    // Every concurrent job's sleep listens on the term's signal.
    setMaxListeners(0, abort.signal);
    term = { fence, abort };
    logger.info("sender lease acquired: this process sends for the chain", {
      at: "submitter.lease",
      leaseTerm: fence.token,
      ownerId: fence.ownerId,
    });
    try {
      await params.onBegin(fence, abort.signal);
    } catch (err) {
      // A half-begun term must not hold the lease without a running worker: give it up and try again later.
      if (holding === fence) {
        holding = undefined;
        await lease.release().catch(() => undefined);
      }
      await end();
      throw err;
    }
    if (holding === fence) {
      markReady("sender");
    }
  };
  const end = async (): Promise<void> => {
    const ending = term;
    term = undefined;
    if (!ending) {
      return;
    }
    ending.abort.abort();
    const endTimeoutMs = params.endTimeoutMs ?? DEFAULT_END_TIMEOUT_MS;
    if (!(await settlesWithin(params.onEnd(), endTimeoutMs))) {
      halted = true;
      ready = false;
      clearTimeout(timer);
      const err = new SenderTermStuckError(`the sender term did not end within ${endTimeoutMs} ms`, {
        leaseTerm: ending.fence.token,
      });
      logger.error("sender term stuck: this process stops competing for the lease", {
        at: "submitter.lease",
        leaseTerm: ending.fence.token,
        ownerId: lease.ownerId,
        code: err.code,
      });
      params.onStuck(err);
      return;
    }
    logger.info("sender term ended", { at: "submitter.lease", leaseTerm: ending.fence.token });
  };

  const tick = async (): Promise<void> => {
    if (holding) {
      const renewed = await lease.renew().catch((err: unknown) => {
        if (shouldWarn()) {
          logger.warn("cannot renew the sender lease", {
            at: "submitter.lease",
            code: errorCode(err),
            error: errorMessage(err),
          });
        }
        return undefined;
      });
      if (renewed === false || !lease.current()) {
        logger.warn("sender lease lost: sending stops, the job goes back to the new holder", {
          at: "submitter.lease",
          leaseTerm: holding.token,
          ownerId: lease.ownerId,
        });
        holding = undefined;
        lease.drop();
        void enqueue("end", end);
      }
      return;
    }
    if (pending > 0) {
      return;
    }
    const fence = await lease.tryAcquire().catch((err: unknown) => {
      if (shouldWarn()) {
        logger.warn("cannot read the sender lease", {
          at: "submitter.lease",
          code: errorCode(err),
          error: errorMessage(err),
        });
      }
      return undefined;
    });
    if (fence && !halted) {
      holding = fence;
      // Not awaited: renewals must go on while the term begins (start() awaits the first begin itself).
      void enqueue("begin", () => begin(fence));
    } else if (!fence) {
      markReady("standby");
    }
  };
  const schedule = (): void => {
    if (halted) {
      return;
    }
    timer = setTimeout(() => {
      // Not awaited by the timer: a begin() that takes long must not hold back renewals.
      ticking = tick().finally(schedule);
    }, params.intervalMs);
  };

  return {
    start: async () => {
      await tick();
      await transitions;
      schedule();
    },
    signal: () => term?.abort.signal ?? ABORTED,
    role: () => (term ? "sender" : "standby"),
    isReady: () => ready,
    halt: () => {
      halted = true;
      clearTimeout(timer);
      term?.abort.abort();
    },
    release: async () => {
      await ticking.catch(() => undefined);
      holding = undefined;
      term = undefined;
      await lease.release();
    },
  };
}

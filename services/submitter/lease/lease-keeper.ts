import { errorCode, errorMessage } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import { createLeaseLoop } from "../../../shared/coordination/lease-loop";
import { abortableDelay } from "../../../shared/timing";
import type { SenderTermStuckError } from "../send/errors";
import type { Fence } from "../send/fence";
import type { SenderLease } from "./sender-lease";
import { createSenderTerm, type SenderTermParams } from "./sender-term";

export type SenderRole = "sender" | "standby";

/** The term's hooks (onBegin, onEnd, endTimeoutMs: sender-term.ts), and when the keeper gives up. */
export interface LeaseKeeperParams extends Omit<SenderTermParams, "ownerId"> {
  readonly lease: SenderLease;
  /** Renewal and standby polling period (a quarter of the TTL by default). */
  readonly intervalMs: number;
  /**
   * Called once when a term could not end within its bound: the keeper has stopped for good (no renewals, no
   * new term, not ready), so the lease lapses and a standby or a restarted process takes over.
   */
  onStuck(err: SenderTermStuckError): void;
}

export interface LeaseKeeper {
  /** Makes the first decision (sender term begun, or standby) before resolving, then keeps ticking. */
  start(): Promise<void>;
  /** The current term's signal once its begin has completed (aborted when it ends); an aborted signal otherwise. */
  signal(): AbortSignal;
  role(): SenderRole;
  /**
   * For a job of the term whose signal is `signal` that met its lease lapsed (SenderLeaseLostError): true once Redis
   * has granted the lease to that same term again since the call (resumed after a stall, or renewed: the job goes on
   * in this process), false once the term has ended (the job is handed back). Settles within a tick or two.
   */
  heldAgain(signal: AbortSignal): Promise<boolean>;
  /** True once the first decision is made and, as sender, what it owns has been taken back. */
  isReady(): boolean;
  /** Stops ticking and aborts the current term; the caller closes the worker, then calls release(). */
  halt(): void;
  /** Drops the lease in Redis (if still ours), so a standby takes over at once. */
  release(): Promise<void>;
}

const ABORTED = AbortSignal.abort();

/** How often a job waiting for its lapsed lease's verdict looks (a few times per renewal interval). */
const HELD_AGAIN_POLL_MS = 25;

/**
 * One lease loop per process (shared/coordination/lease-loop.ts): while it holds the sender lease it renews it every
 * interval; while it does not, it tries to take it. Taking the lease and beginning the term (sender-term.ts) are
 * two steps: term changes run one at a time in a chain, so a term never begins before the previous one's job
 * has handed itself back, and renewals keep running during a slow begin (RPC reads in the reconcile).
 */
export function createLeaseKeeper(params: LeaseKeeperParams): LeaseKeeper {
  const { lease, logger } = params;
  /** The fence taken, set at once; the term begins only after every earlier change has run. */
  let holding: Fence | undefined;
  let ready = false;
  const term = createSenderTerm({ ...params, ownerId: lease.ownerId });
  const changes = createTermChanges(logger);

  const markReady = (role: SenderRole): void => {
    if (!ready) {
      ready = true;
      const leaseTerm = term.current()?.fence.term;
      logger.info("submitter ready", { at: "submitter.ready", role, ownerId: lease.ownerId, leaseTerm });
    }
  };
  const begin = async (fence: Fence): Promise<void> => {
    if (loop.halted() || holding !== fence) {
      return;
    }
    try {
      await term.begin(fence);
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
    const stuck = await term.end();
    if (stuck) {
      // The worker would not pause: stop for good, so the lease lapses to a standby or a restarted process.
      loop.halt();
      ready = false;
      params.onStuck(stuck);
    }
  };

  const loop = createLeaseLoop({
    lease,
    intervalMs: params.intervalMs,
    logger,
    at: "submitter.lease",
    leaseName: "sender lease",
    held: () => holding,
    mayAcquire: () => changes.idle(),
    onAcquired: (fence) => {
      holding = fence;
      // Not awaited: renewals must go on while the term begins (start() awaits the first begin itself).
      void changes.run("begin", () => begin(fence));
    },
    onNotAcquired: () => markReady("standby"),
    // A stall past the TTL that nobody used, on the same Redis server, goes on in the same term: its nonces, records
    // and holds are all still in Redis, so there is nothing for a new term's begin to take back; re-running every
    // job and the reconcile after each such stall is what livelocked a loaded submitter (docs/operating.md).
    resumeLapsed: true,
    onLost: (fence) => {
      logger.warn("sender lease lost: sending stops, the job goes back to the new holder", {
        at: "submitter.lease",
        leaseTerm: fence.term,
        ownerId: lease.ownerId,
      });
      holding = undefined;
      void changes.run("end", end);
    },
  });

  return {
    start: async () => {
      await loop.tick();
      await changes.settled();
      loop.start();
    },
    // Only a term whose begin has completed: a job that a fetch still in flight hands over during the begin (the
    // worker is paused, not closed) must not sign before the nonce reconcile has set the floor; it hands itself back.
    signal: () => {
      const current = term.current();
      return current?.begun ? current.signal : ABORTED;
    },
    role: () => (term.current() ? "sender" : "standby"),
    heldAgain: async (signal) => {
      // Only a grant sent after the refusal counts: a renewal sent before it says nothing about why it was refused.
      const askedAtMs = Date.now();
      while (!signal.aborted) {
        const current = term.current();
        if (current?.signal !== signal) {
          return false;
        }
        if (lease.current()?.value === current.fence.value && lease.confirmedAtMs() >= askedAtMs) {
          return true;
        }
        await abortableDelay(HELD_AGAIN_POLL_MS, signal);
      }
      return false;
    },
    isReady: () => ready,
    halt: () => {
      loop.halt();
      term.abort();
    },
    release: async () => {
      await loop.idle();
      holding = undefined;
      term.forget();
      await lease.release();
    },
  };
}

interface TermChanges {
  /** Runs `change` after every earlier one; a failure is logged, and the next change still runs. */
  run(what: string, change: () => Promise<void>): Promise<void>;
  /** True when no change is queued or running (a new lease may be taken). */
  idle(): boolean;
  /** Resolves once every change queued so far has run. */
  settled(): Promise<void>;
}

function createTermChanges(logger: Logger): TermChanges {
  let chain: Promise<void> = Promise.resolve();
  let pending = 0;
  return {
    run: (what, change) => {
      pending += 1;
      chain = chain
        .then(change)
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
      return chain;
    },
    idle: () => pending === 0,
    settled: () => chain,
  };
}

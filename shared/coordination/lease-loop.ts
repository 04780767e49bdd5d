import { errorCode, errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import type { Fence, Lease, ResumeOutcome } from "./lease";

/** A Redis outage logs one warning per interval, not one per tick. */
const WARN_INTERVAL_MS = 10_000;

export interface LeaseLoopParams {
  readonly lease: Lease;
  /** Renewal period while held, take period while not: a quarter of the TTL in both keepers. */
  readonly intervalMs: number;
  readonly logger: Logger;
  /** The `at` of the loop's warnings ("poller.lease"). */
  readonly at: string;
  /** What the warnings call the lease ("poller lease"). */
  readonly leaseName: string;
  /** The fence of the term this process runs now, if any: while there is one the loop renews, else it takes. */
  held(): Fence | undefined;
  /** False when no take may be tried at this tick (the previous term has not ended yet). */
  mayAcquire(): boolean | Promise<boolean>;
  /** The lease was just taken: begin a term. Not awaited, so renewals go on while the term begins. */
  onAcquired(fence: Fence): void;
  /** A take did not get the lease: another owner holds it, or Redis did not answer. */
  onNotAcquired?(): void;
  /** The held lease is lost (a renewal refused, or no longer locally valid); it is already dropped locally. */
  onLost(fence: Fence): void;
  /**
   * A held lease found lapsed is first resumed in the same term when nobody took it and the Redis server is the
   * one that granted the term (Lease.resume): the term goes on, no onLost. Only then; otherwise onLost as always.
   */
  readonly resumeLapsed: boolean;
  /** A lapsed lease was resumed (the warning is logged already). */
  onResumed?(fence: Fence): void;
}

export interface LeaseLoop {
  /** One tick now: renews the held lease, or tries to take it. */
  tick(): Promise<void>;
  /** Ticks every interval from now on, each once the previous one has ended, until halt(). */
  start(): void;
  /** No further tick (one in flight runs to its end: idle()). */
  halt(): void;
  halted(): boolean;
  /** Resolves once the tick in flight, if any, has ended. */
  idle(): Promise<void>;
  /** A warning about the lease, at most one per WARN_INTERVAL_MS across all of this loop's warnings. */
  warn(message: string, err: unknown): void;
}

/**
 * The loop both lease keepers run (services/poller/poller-lease.ts, services/submitter/lease/lease-keeper.ts):
 * on its own timer, independent of the work a term does, so a slow RPC read or a slow term change never delays
 * a renewal. A holder renews every interval and gives the term up once a renewal fails or the lease is no longer
 * locally valid, unless the lapsed lease can be resumed in the same term (resumeLapsed: an event-loop stall past the
 * TTL that nobody used, on the same Redis server, then costs no term change); a non-holder renews nothing and tries to take the lease, which succeeds only once the holder
 * released it or let it lapse. What a term is, and when one may begin, is the keeper's.
 */
export function createLeaseLoop(params: LeaseLoopParams): LeaseLoop {
  const { lease, logger } = params;
  let halted = false;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();
  let warnedAtMs = 0;

  const warn = (message: string, err: unknown): void => {
    if (Date.now() - warnedAtMs >= WARN_INTERVAL_MS) {
      warnedAtMs = Date.now();
      logger.warn(message, { at: params.at, code: errorCode(err), error: errorMessage(err) });
    }
  };

  /** When the running tick's timer was due. */
  let dueAtMs: number | undefined;

  const renew = async (fence: Fence): Promise<void> => {
    const due = dueAtMs;
    const renewed = await lease.renew().catch((err: unknown) => {
      warn(`cannot renew the ${params.leaseName}`, err);
      return undefined;
    });
    // From when the renewal was due to its answer: a stall can fall before the timer fires or while the answer
    // waits to be read, and both count (a stall after the send measured only 16 ms from the timer alone).
    const stallMs = due === undefined ? 0 : Math.max(0, Date.now() - due);
    // A Redis error alone loses nothing: the lease is lost once it is no longer locally valid.
    if (params.held() !== fence || (renewed !== false && lease.current())) {
      return;
    }
    const resumed = params.resumeLapsed ? await resume(fence, stallMs) : false;
    if (!resumed && params.held() === fence) {
      lease.drop();
      params.onLost(fence);
    }
  };

  /** The lapsed lease of `fence` set again in the same term, if nothing can have happened meanwhile (lease.ts). */
  const resume = async (fence: Fence, stallMs: number): Promise<boolean> => {
    const outcome: ResumeOutcome | undefined = await lease.resume(fence).catch((err: unknown) => {
      warn(`cannot resume the ${params.leaseName}`, err);
      return undefined;
    });
    const context = { at: params.at, leaseTerm: fence.term, ownerId: fence.ownerId, stallMs };
    if (outcome !== "resumed" || params.held() !== fence) {
      logger.info(`the lapsed ${params.leaseName} was not resumed: the term ends`, { ...context, outcome });
      return false;
    }
    logger.warn(
      `${params.leaseName} lapsed during a ${stallMs} ms stall and was resumed: nobody took it, same Redis server`,
      context,
    );
    params.onResumed?.(fence);
    return true;
  };

  const tryAcquire = async (): Promise<void> => {
    if (!(await params.mayAcquire()) || halted) {
      return;
    }
    const fence = await lease.tryAcquire().catch((err: unknown) => {
      warn(`cannot read the ${params.leaseName}`, err);
      return undefined;
    });
    if (!fence) {
      params.onNotAcquired?.();
    } else if (!halted) {
      params.onAcquired(fence);
    }
  };

  const tick = (): Promise<void> => {
    const fence = params.held();
    return fence ? renew(fence) : tryAcquire();
  };

  const schedule = (): void => {
    if (halted) {
      return;
    }
    const due = Date.now() + params.intervalMs;
    timer = setTimeout(() => {
      dueAtMs = due;
      ticking = tick().finally(() => {
        dueAtMs = undefined;
        schedule();
      });
    }, params.intervalMs);
  };

  return {
    tick,
    start: schedule,
    halt: () => {
      halted = true;
      clearTimeout(timer);
    },
    halted: () => halted,
    idle: () => ticking.catch(() => undefined),
    warn,
  };
}

import { setMaxListeners } from "node:events";
import type { Logger } from "../../../shared/logging/create-logger";
import { settlesWithin } from "../../../shared/timing";
import { SenderTermStuckError } from "../send/errors";
import type { Fence } from "../send/fence";

/** Well above a healthy pause (active jobs stop at their next safe point within a poll interval). */
export const DEFAULT_END_TIMEOUT_MS = 10_000;

export interface SenderTermParams {
  readonly logger: Logger;
  readonly ownerId: string;
  /** Takes back what the holder owns: nonce reconcile, orphaned jobs, then starts the worker. */
  onBegin(fence: Fence, signal: AbortSignal): Promise<void>;
  /** Stops sending: the worker fetches no more, and every run of the term (aborted) has handed its job back. */
  onEnd(): Promise<void>;
  /** Bound on onEnd; past it the term is stuck (default DEFAULT_END_TIMEOUT_MS). */
  readonly endTimeoutMs?: number;
}

export interface SenderTerm {
  /** Begins a term under `fence`: its own abort signal, then onBegin (whose error it throws, the term still set). */
  begin(fence: Fence): Promise<void>;
  /** Ends the current term, if any: aborts its signal and waits for onEnd; the error when onEnd outlasts its bound. */
  end(): Promise<SenderTermStuckError | undefined>;
  /** The current term; `begun` once onBegin has completed (the nonce floor set, orphaned jobs taken back). */
  current(): { readonly fence: Fence; readonly signal: AbortSignal; readonly begun: boolean } | undefined;
  /** Aborts the current term's signal without ending it (a shutdown: the caller closes the worker itself). */
  abort(): void;
  /** Forgets the current term without ending it (its worker is closed). */
  forget(): void;
}

/**
 * What one sender term is, from its begin to its end; when terms begin and end is the keeper's
 * (lease-keeper.ts). At most one term at a time: the keeper runs begin and end one after another.
 */
export function createSenderTerm(params: SenderTermParams): SenderTerm {
  const { logger } = params;
  let term: { fence: Fence; abort: AbortController; begun: boolean } | undefined;
  return {
    begin: async (fence) => {
      const abort = new AbortController();
      // Every concurrent job's sleep listens on the term's signal.
      setMaxListeners(0, abort.signal);
      const beginning = { fence, abort, begun: false };
      term = beginning;
      logger.info("sender lease acquired: this process sends for the chain", {
        at: "submitter.lease",
        leaseTerm: fence.term,
        ownerId: fence.ownerId,
      });
      await params.onBegin(fence, abort.signal);
      beginning.begun = true;
    },
    end: async () => {
      const ending = term;
      term = undefined;
      if (!ending) {
        return undefined;
      }
      ending.abort.abort();
      const endTimeoutMs = params.endTimeoutMs ?? DEFAULT_END_TIMEOUT_MS;
      if (await settlesWithin(params.onEnd(), endTimeoutMs)) {
        logger.info("sender term ended", { at: "submitter.lease", leaseTerm: ending.fence.term });
        return undefined;
      }
      const err = new SenderTermStuckError(`the sender term did not end within ${endTimeoutMs} ms`, {
        leaseTerm: ending.fence.term,
      });
      logger.error("sender term stuck: this process stops competing for the lease", {
        at: "submitter.lease",
        leaseTerm: ending.fence.term,
        ownerId: params.ownerId,
        code: err.code,
      });
      return err;
    },
    current: () => (term ? { fence: term.fence, signal: term.abort.signal, begun: term.begun } : undefined),
    abort: () => term?.abort.abort(),
    forget: () => {
      term = undefined;
    },
  };
}

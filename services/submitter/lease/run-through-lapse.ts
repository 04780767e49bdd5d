import type { Logger } from "../../../shared/logging/create-logger";
import { SenderLeaseLostError } from "../send/errors";

/** A run resumes after at most this many lapses of its own; one more and it is handed back (bounds a flapping lease). */
export const MAX_RESUMES_PER_RUN = 3;

/**
 * Runs a job's attempt; when it stops on its lapsed sender lease (SenderLeaseLostError: nothing was sent after the
 * refusal, and what it wrote is in its record) while its term may still resume the lease (an event-loop stall past
 * the TTL that nobody used: shared/coordination/lease-loop.ts), waits for the verdict. Resumed: the attempt runs
 * again here, from its record, as a re-fetched job would, without the trip through the queue. Ended: the error goes
 * on to the outcome policy, which hands the job back.
 */
export async function runThroughLapses<T>(
  p: { signal: AbortSignal; leaseHeldAgain?: (signal: AbortSignal) => Promise<boolean>; logger: Logger },
  attempt: () => Promise<T>,
): Promise<T> {
  for (let resumes = 0; ; resumes += 1) {
    try {
      return await attempt();
    } catch (err) {
      const heldAgain = p.leaseHeldAgain;
      if (!(err instanceof SenderLeaseLostError) || heldAgain === undefined || resumes >= MAX_RESUMES_PER_RUN) {
        throw err;
      }
      if (!(await heldAgain(p.signal))) {
        throw err;
      }
      p.logger.info("the sender lease was resumed in the same term: the job runs on from its record", {
        at: "submitter.lease",
        resumes: resumes + 1,
      });
    }
  }
}

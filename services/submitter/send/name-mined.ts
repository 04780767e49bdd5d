import type { SendContext, SendJob } from "./send-context";
import { LedgerNamingError } from "./errors";

/** A job whose naming Redis refused runs again this soon (parked, no attempt used). */
export const LEDGER_NAMING_RETRY_MS = 2_000;

/**
 * Names one of the job's mined transactions to the ledger, before the job may end: a confirmed one right after its
 * record says so, a reverted one before its revert fails the job. Why here and not after the job: a job ends only
 * after this resolved, so nothing is lost to a crash or a Redis refusal in between. A crash re-runs the job from its
 * record, which names the transaction again (the deterministic job id joins a naming that did land); a refusal
 * throws LedgerNamingError, which parks the job and re-runs it the same way. The money path is untouched: the
 * re-run sends nothing, it only finds the record finished.
 */
export async function nameMined(ctx: SendContext, job: SendJob, transactionHash: string): Promise<void> {
  if (ctx.ledger === undefined || job.ledgerEntry === undefined) {
    return;
  }
  const named = await ctx.ledger.name([
    { chainId: ctx.chainId, hash: transactionHash.toLowerCase(), source: "submitter", ...job.ledgerEntry },
  ]);
  if (!named) {
    throw new LedgerNamingError("could not name the job's mined transaction to the ledger; the job runs again", {
      transactionHash,
      retryAtMs: Date.now() + LEDGER_NAMING_RETRY_MS,
    });
  }
}

import type { TransactionReceipt } from "ethers";
import { errorCode, errorMessage } from "../../../shared/errors";
import { bumpOrRebroadcast } from "./bump";
import { SenderLeaseLostError, SubmitterShutdownError, TxRecordConflictError } from "./errors";
import type { SendContext, SendJob } from "./send-context";
import { createThrottle, sleepUnlessShuttingDown, throwIfShuttingDown } from "./timing";
import { latestAttempt, type TxRecord } from "./tx-record";

/**
 * A nonce counts as taken by someone else only when two observations in a row say so: a load-balanced
 * endpoint can answer the count from one backend and the receipts from a slower one.
 */
const CONSUMED_OBSERVATIONS = 2;
const WARN_INTERVAL_MS = 30_000;

export type MiningOutcome =
  | { readonly kind: "mined"; readonly receipt: TransactionReceipt; readonly record: TxRecord }
  /** The record's nonce is used on chain by a transaction that is none of the job's: they can never be mined. */
  | { readonly kind: "nonce-taken"; readonly record: TxRecord; readonly countAtSafeBlock: number };

interface Observation {
  readonly receipt?: TransactionReceipt;
  readonly countAtSafeBlock: number;
}

/**
 * Polls the receipts of all the job's transactions until one is mined. After `confirmationTimeoutMs`
 * without one, bumps (or rebroadcasts) and starts the timer again. RPC errors while waiting are logged and
 * waited out: a transaction may be in flight, and failing the job would not stop it from being mined.
 */
export async function waitForMining(ctx: SendContext, job: SendJob, initial: TxRecord): Promise<MiningOutcome> {
  let record = initial;
  let lastActionAtMs = latestAttempt(record)?.sentAtMs ?? Date.now();
  let takenStreak = 0;
  const shouldWarn = createThrottle(WARN_INTERVAL_MS);
  for (;;) {
    throwIfShuttingDown(ctx.signal);
    const seen = await observe(ctx, record).catch((err: unknown) => {
      if (shouldWarn()) {
        ctx.logger.warn("cannot read receipts; still waiting", {
          at: "submitter.wait",
          code: errorCode(err),
          error: errorMessage(err),
        });
      }
      return undefined;
    });
    if (seen?.receipt) {
      return { kind: "mined", receipt: seen.receipt, record };
    }
    takenStreak = seen && seen.countAtSafeBlock > record.nonce ? takenStreak + 1 : 0;
    if (seen && takenStreak >= CONSUMED_OBSERVATIONS) {
      return { kind: "nonce-taken", record, countAtSafeBlock: seen.countAtSafeBlock };
    }
    if (Date.now() - lastActionAtMs >= ctx.chain.confirmationTimeoutMs) {
      record = await bumpOrRebroadcast(ctx, job, record).catch((err: unknown) => {
        // A bump that could not even be built (signer, gas price, Redis) changes nothing on chain: wait on.
        // A record conflict or a lost lease means another processor owns the job now: stop here.
        if (
          err instanceof TxRecordConflictError ||
          err instanceof SenderLeaseLostError ||
          err instanceof SubmitterShutdownError
        ) {
          throw err;
        }
        ctx.logger.warn("could not bump; still waiting", {
          at: "submitter.bump",
          code: errorCode(err),
          error: errorMessage(err),
        });
        return record;
      });
      lastActionAtMs = Date.now();
    }
    await sleepUnlessShuttingDown(ctx.pollIntervalMs, ctx.signal);
  }
}

/**
 * One consistent look, all on the same provider: the signer's transaction count at the newest block that
 * already has `confirmations` (read first), then the receipts of every hash the job ever sent. If the count
 * says the nonce is used and none of our receipts exists, the nonce went to another transaction, deep
 * enough that a re-org of fewer than `confirmations` blocks cannot undo it.
 */
async function observe(ctx: SendContext, record: TxRecord): Promise<Observation> {
  const hashes = [...new Set(record.attempts.map((a) => a.hash))].reverse();
  return ctx.provider.read(async (p) => {
    const head = await p.getBlockNumber();
    const safeBlock = Math.max(0, head - ctx.chain.confirmations + 1);
    const countAtSafeBlock = await p.getTransactionCount(ctx.from, safeBlock);
    const receipts = await Promise.all(hashes.map((hash) => p.getTransactionReceipt(hash)));
    const receipt = receipts.find((r): r is TransactionReceipt => r !== null);
    return { receipt, countAtSafeBlock };
  }, "observe");
}

import { createHash } from "node:crypto";
import { errorMessage } from "../../../shared/errors";
import { TX_JOB, transferExpiryOf, type TxJobData, type TxJobName, type TxJobProgress } from "../../../shared/queues";
import type { SubmitterContext } from "../context";
import type { LedgerEntry, SendJob, SendTrace } from "../send/send-context";
import type { TxJob } from "./tx-job";

/**
 * The job as the send pipeline sees it: what its record is checked against (name, data hash), how long the record
 * is kept, what the ledger books it as, whether a rebuild may act twice, and the calls back into the job (its
 * progress, its liquidity hold) when a transaction is broadcast, mined or rebuilt.
 */
export function sendJobOf(ctx: SubmitterContext, job: TxJob, jobId: string, trace: SendTrace): SendJob {
  return {
    jobId,
    jobName: job.name,
    dataHash: hashJobData(job.name, job.data),
    transferExpirySec: transferExpiryOf(job.data),
    reportBroadcast: async (transactionHash, nonce) => {
      const progress: TxJobProgress = { stage: "broadcast", transactionHash, nonce };
      await job.updateProgress(progress);
    },
    trace,
    replayProtected: REPLAY_PROTECTED_JOBS.has(job.name),
    ledgerEntry: ledgerEntryOf(job.name, job.data),
    onMined: async (receipt) => {
      trace.minedOk = receipt.status === 1;
      // Best effort: an unmarked hold only over-counts until the run settles it from the confirmed record.
      await ctx.liquidity?.markMined(receipt.blockNumber).catch((err: unknown) => {
        ctx.logger.warn("could not mark the liquidity hold mined", {
          at: "submitter.liquidity",
          error: errorMessage(err),
        });
      });
    },
    onRebuild: async () => ctx.liquidity?.unmarkMined(),
  };
}

/**
 * Jobs whose call the contract refuses to execute twice (#P:015, #F:019, #C:019): a rebuild at a new nonce
 * after a nonce reported taken cannot act twice. Any other job (remove-liquidity) rebuilds only once the
 * nonce is proven taken (send/confirm-nonce-taken.ts).
 */
const REPLAY_PROTECTED_JOBS: ReadonlySet<string> = new Set([
  TX_JOB.prepareReceiver,
  TX_JOB.fulfillSender,
  TX_JOB.cancelSender,
  TX_JOB.cancelReceiver,
]);

/** sha256 over the name and the data with sorted keys: the same request always hashes the same. */
export function hashJobData(name: string, data: unknown): string {
  const sorted = (value: unknown): unknown =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(
          Object.entries(value)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([k, v]) => [k, sorted(v)]),
        )
      : value;
  return createHash("sha256")
    .update(JSON.stringify({ name, data: sorted(data) }))
    .digest("hex");
}

/** Why each job's signer sends: the `kind` its mined transaction is booked as (shared/queues/ledger-jobs.ts). */
const LEDGER_KIND_OF: Readonly<Record<TxJobName, LedgerEntry["kind"]>> = {
  [TX_JOB.prepareReceiver]: "prepare",
  [TX_JOB.fulfillSender]: "fulfill",
  [TX_JOB.cancelSender]: "cancel",
  [TX_JOB.cancelReceiver]: "cancel",
  [TX_JOB.relayFulfill]: "relay",
  [TX_JOB.removeLiquidity]: "remove-liquidity",
  [TX_JOB.addLiquidityFor]: "add-liquidity",
};

/** The job's ledger entry: its kind, the swap it acts on (a lifecycle job), the admin request (an operation). */
export function ledgerEntryOf(name: string, data: TxJobData): LedgerEntry | undefined {
  const kind = LEDGER_KIND_OF[name as TxJobName];
  if (kind === undefined) {
    return undefined;
  }
  const d = data as { txData?: { transactionId?: string }; sender?: { txData?: { transactionId?: string } } };
  const transactionId = d.txData?.transactionId ?? d.sender?.txData?.transactionId;
  const requestId = (data as { requestId?: unknown }).requestId;
  return {
    kind,
    ...(transactionId !== undefined ? { transactionId: transactionId.toLowerCase() } : {}),
    ...(typeof requestId === "string" ? { requestId } : {}),
  };
}

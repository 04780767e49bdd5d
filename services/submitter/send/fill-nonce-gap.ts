import { toChainError } from "../../../shared/chain/errors";
import { errorMessage } from "../../../shared/errors";
import { persistNewAttempt, broadcastAttempt } from "./attempts";
import { bumpOrRebroadcast } from "./bump";
import { LedgerNamingError, isStoppedBeforeSending } from "./errors";
import { nameMined } from "./name-mined";
import type { SendContext, SendJob } from "./send-context";
import { newTxRecord, type TxAttempt, type TxRecord } from "./tx-record";

/** A zero-value transfer to ourselves costs the base 21000 gas. */
const SELF_TRANSFER_GAS = "21000";

export type GapFill =
  | { readonly kind: "rebroadcast"; readonly jobId: string; readonly transactionHash: string }
  | { readonly kind: "filler"; readonly transactionHash?: string; readonly bumps: number };

const FILLER_JOB_NAME = "nonce-gap-fill";

/** The filler's own record (crash-safe like any job's): one per nonce, so a second fill bumps it instead. */
export function fillerJobId(nonce: number): string {
  return `${FILLER_JOB_NAME}-${nonce}`;
}

/** What the ledger books a mined filler as: upkeep of the nonce sequence, gas with no swap. */
const FILLER_LEDGER_ENTRY = { kind: "nonce-fill" } as const;

/**
 * A filler is sent outside any job, so nothing waits for it to be mined: the gap tracker calls this for the fillers
 * the nonce-jobs index names below the chain's mined count (a restart finds them there too). The attempt of the
 * filler that was mined is named to the ledger (a bump that was not mined is not), then the record is finished
 * (confirmed, or reverted), so it is not looked at again and expires like a finished job's. A filler none of whose
 * attempts was mined (the stored transaction of its nonce was, after all) is left as it is. Returns the fillers
 * still to settle: those not mined yet (at or above the mined count) and those whose naming was refused (the record
 * stays open and the next check tries again).
 */
export async function settleMinedFillers(ctx: SendContext, minedCount: number): Promise<number> {
  let open = 0;
  for (const { nonce, jobId } of await ctx.records.indexedJobs(ctx.from)) {
    if (jobId !== fillerJobId(nonce)) {
      continue;
    }
    const record = await ctx.records.load(jobId);
    if (record === undefined || record.status !== "sending") {
      continue;
    }
    if (nonce >= minedCount) {
      open += 1;
      continue;
    }
    const attempts = record.attempts.filter((a) => a.nonce === nonce).reverse();
    const receipts = await Promise.all(attempts.map((a) => ctx.provider.getTransactionReceipt(a.hash)));
    const receipt = receipts.find((r) => r !== null);
    if (!receipt) {
      continue;
    }
    const job: SendJob = {
      jobId,
      jobName: FILLER_JOB_NAME,
      dataHash: record.dataHash,
      reportBroadcast: async () => undefined,
      trace: {},
      ledgerEntry: FILLER_LEDGER_ENTRY,
    };
    try {
      await nameMined(ctx, job, receipt.hash);
    } catch (err) {
      if (!(err instanceof LedgerNamingError)) {
        throw err;
      }
      open += 1;
      continue;
    }
    await ctx.records.save(
      receipt.status === 1
        ? {
            ...record,
            status: "confirmed",
            result: { transactionHash: receipt.hash, blockNumber: receipt.blockNumber },
          }
        : { ...record, status: "reverted", revertedHash: receipt.hash },
    );
  }
  return open;
}

/**
 * Closes the nonce gap at `nonce` (the chain's count stayed there while later nonces were handed out): the
 * stored transaction of that nonce is rebroadcast when one exists (nonce-jobs index), since it is already
 * signed and may be what the queue behind it waits for; otherwise, or when the node refuses it, a zero-value
 * self-transfer is persisted and sent at that nonce, and bumped on later fills like any transaction.
 */
export async function fillNonceGap(outer: SendContext, nonce: number): Promise<GapFill> {
  // The same replica wait as every send, its mark taken before any write of this fill: the stored transaction's
  // re-send included, since its record may be a write replicas never acknowledged (its job then stopped).
  const replicated = outer.markReplication?.();
  const ctx: SendContext = { ...outer, replicated };
  const jobId = await ctx.records.jobAtNonce(ctx.from, nonce);
  const record = jobId ? await ctx.records.load(jobId) : undefined;
  const stored = record ? latestAttemptAt(record, nonce) : undefined;
  const fillerId = fillerJobId(nonce);
  if (record && stored && record.jobId !== fillerId) {
    try {
      await replicated?.();
      ctx.lease?.assertHeld();
      await ctx.provider.broadcast(stored.raw);
      ctx.logger.warn("nonce gap: rebroadcast the stored transaction of the missing nonce", {
        at: "submitter.gap",
        nonce,
        jobId: record.jobId,
        transactionHash: stored.hash,
      });
      return { kind: "rebroadcast", jobId: record.jobId, transactionHash: stored.hash };
    } catch (err) {
      if (isStoppedBeforeSending(err)) {
        throw err;
      }
      ctx.logger.warn("nonce gap: the stored transaction was refused; filling with a self-transfer", {
        at: "submitter.gap",
        nonce,
        jobId: record.jobId,
        code: toChainError(err).code,
        error: errorMessage(err),
      });
    }
  }
  const job: SendJob = {
    jobId: fillerId,
    jobName: FILLER_JOB_NAME,
    dataHash: `nonce-${nonce}`,
    reportBroadcast: async () => undefined,
    trace: {},
  };
  const existing = await ctx.records.load(fillerId);
  if (existing) {
    const after = await bumpOrRebroadcast(ctx, job, existing);
    logFiller(ctx, nonce, after, "nonce gap still open: filler bumped or rebroadcast");
    return { kind: "filler", transactionHash: after.attempts[after.attempts.length - 1]?.hash, bumps: after.bumps };
  }
  const draft = newTxRecord({
    jobId: fillerId,
    jobName: job.jobName,
    chainId: ctx.chainId,
    from: ctx.from,
    dataHash: job.dataHash,
    call: { to: ctx.from, data: "0x", value: "0", gasLimit: SELF_TRANSFER_GAS },
  });
  const fee = await ctx.gasPrice();
  const { record: saved, attempt } = await persistNewAttempt(ctx, draft, { nonce, fee, bumps: 0 });
  try {
    await broadcastAttempt(ctx, job, attempt);
  } catch (err) {
    if (isStoppedBeforeSending(err)) {
      throw err;
    }
    // Persisted: the next fill rebroadcasts or bumps it.
    ctx.logger.warn("nonce gap filler refused; retried at the next check", {
      at: "submitter.gap",
      nonce,
      code: toChainError(err).code,
    });
  }
  logFiller(ctx, nonce, saved, "nonce gap: sent a zero-value self-transfer at the missing nonce");
  return { kind: "filler", transactionHash: attempt.hash, bumps: 0 };
}

function latestAttemptAt(record: TxRecord, nonce: number): TxAttempt | undefined {
  return [...record.attempts].reverse().find((a) => a.nonce === nonce);
}

function logFiller(ctx: SendContext, nonce: number, record: TxRecord, message: string): void {
  ctx.logger.warn(message, {
    at: "submitter.gap",
    nonce,
    transactionHash: record.attempts[record.attempts.length - 1]?.hash,
    bumps: record.bumps,
  });
}

import { ZeroHash, type TransactionReceipt } from "ethers";
import { InsufficientFundsError, TransactionRevertedError } from "../../../shared/chain/errors";
import type { TxJobResult } from "../../../shared/queues";
import { rebroadcastLatest, submitWithFreshNonce } from "./attempts";
import { confirmNonceTaken, nonceTakenUnconfirmed } from "./confirm-nonce-taken";
import { TxRecordMismatchError } from "./errors";
import type { SendContext, SendJob } from "./send-context";
import { nameMined } from "./name-mined";
import { isTxNoop, newTxRecord, type TxCall, type TxNoop, type TxRecord } from "./tx-record";
import { waitForConfirmations } from "./wait-for-confirmations";
import { waitForMining } from "./wait-for-mining";

/** TxJobResult needs a hash; a no-op has none, so it carries the zero hash next to `noop: true`. */
export const NO_TRANSACTION_HASH = ZeroHash;

/**
 * The send pipeline for one job, resumable at any point:
 *
 *   record? ─ confirmed ──────────────────────────────▶ stored result (nothing sent)
 *      │  └─ sending ─ rebroadcast newest ─┐
 *      └─ none ─ buildCall (estimate) ─ fresh nonce ─ persist ─ broadcast ─┐
 *                  └─ no-op (effect already on chain) ─▶ {noop: true} (no nonce, no record)
 *                                          ▼                               ▼
 *                      wait for mining (bump on timeout, same nonce) ◀─────┘
 *                        ├─ receipt status 0 ─▶ reverted (terminal)
 *                        ├─ nonce taken by a foreign tx ─▶ (not replay-protected: proven? no ─▶ retry later)
 *                        │                               ─▶ re-estimate ─ fresh nonce ─ persist ─ broadcast ─▶ wait
 *                        └─ receipt ─ confirmations ─ receipt still there? ─ yes ─▶ persist result
 *                                                                          └─ no (re-org) ─▶ wait
 *
 * Invariant: a new transaction (new nonce) is only built when none of the job's transactions can be mined.
 */
export async function sendJobTransaction(
  ctx: SendContext,
  job: SendJob,
  buildCall: () => Promise<TxCall | TxNoop>,
): Promise<TxJobResult> {
  let record = await ctx.records.load(job.jobId);
  if (record) {
    assertSameJob(record, job, ctx.from);
    job.trace.nonce = record.nonce;
    job.trace.bumps = record.bumps;
    if (record.result) {
      ctx.logger.info("job already confirmed: returning its stored result, sending nothing", {
        at: "submitter.send",
        transactionHash: record.result.transactionHash,
      });
      job.trace.transactionHash = record.result.transactionHash;
      // A crash (or a refused naming) after the record was confirmed: named now, before the job ends.
      await nameMined(ctx, job, record.result.transactionHash);
      return record.result;
    }
    if (record.status === "reverted") {
      if (record.revertedHash !== undefined) {
        await nameMined(ctx, job, record.revertedHash);
      }
      throw revertedError(ctx, record.lastError?.message ?? "the job's transaction reverted", record);
    }
    ctx.logger.info("resuming the job's persisted transaction", {
      at: "submitter.send",
      nonce: record.nonce,
      attempts: record.attempts.length,
    });
    // Unaffordable and never bumped (so possibly never accepted anywhere): hold the job (retry with backoff,
    // the error says "top up") rather than wait silently for a transaction no node may have.
    const unbumped = record.bumps === 0;
    await rebroadcastLatest(ctx, job, record, (err) => unbumped && err instanceof InsufficientFundsError);
  } else {
    const call = await buildCall();
    if (isTxNoop(call)) {
      // Nothing was sent and nothing is persisted: a re-run checks the chain again and finds the same.
      ctx.logger.info("the job's effect is already on chain: sending nothing", {
        at: "submitter.send",
        reason: call.reason,
      });
      job.trace.transactionHash = call.transactionHash;
      if (call.transactionHash !== undefined) {
        // The job's own transaction, found on chain without its record (a withdrawal after a lost record).
        await nameMined(ctx, job, call.transactionHash);
      }
      return {
        transactionHash: call.transactionHash ?? NO_TRANSACTION_HASH,
        blockNumber: call.blockNumber,
        noop: true,
      };
    }
    record = newTxRecord({
      jobId: job.jobId,
      jobName: job.jobName,
      chainId: ctx.chainId,
      from: ctx.from,
      dataHash: job.dataHash,
      call,
      transferExpirySec: job.transferExpirySec,
    });
    record = await submitWithFreshNonce(ctx, job, record);
  }
  return settle(ctx, job, record);
}

async function settle(ctx: SendContext, job: SendJob, initial: TxRecord): Promise<TxJobResult> {
  let record = initial;
  for (;;) {
    const outcome = await waitForMining(ctx, job, record);
    record = outcome.record;
    let receipt: TransactionReceipt;
    if (outcome.kind === "nonce-taken") {
      const proof = job.replayProtected ? undefined : await confirmNonceTaken(ctx, record);
      if (proof?.kind === "unconfirmed") {
        throw nonceTakenUnconfirmed(ctx, record, proof.witnesses, proof.providers);
      }
      if (proof?.kind !== "mined") {
        ctx.logger.error(
          "nonce used by a transaction this job did not send (a manual transaction?): sending a new one",
          {
            at: "submitter.send",
            nonce: record.nonce,
            countAtSafeBlock: outcome.countAtSafeBlock,
            attempts: record.attempts.length,
            witnesses: proof?.witnesses,
          },
        );
        await job.onRebuild?.();
        await reestimate(ctx, record.call);
        record = await submitWithFreshNonce(ctx, job, record);
        continue;
      }
      ctx.logger.warn("nonce reported taken, but another provider has the job's own receipt: it is mined", {
        at: "submitter.send",
        nonce: record.nonce,
        transactionHash: proof.receipt.hash,
      });
      receipt = proof.receipt;
    } else {
      receipt = outcome.receipt;
    }
    job.trace.transactionHash = receipt.hash;
    await job.onMined?.({ blockNumber: receipt.blockNumber, status: receipt.status });
    if (receipt.status !== 1) {
      record = await ctx.records.save({ ...record, status: "reverted", revertedHash: receipt.hash });
      await nameMined(ctx, job, receipt.hash);
      throw revertedError(ctx, "the transaction was mined and reverted (receipt status 0)", record, receipt);
    }
    await ctx.hooks?.at("confirmations-wait", { jobId: job.jobId, nonce: record.nonce });
    const confirmed = await waitForConfirmations(ctx, receipt);
    if (!confirmed) {
      ctx.logger.warn("receipt vanished before enough confirmations (re-org): waiting for mining again", {
        at: "submitter.confirm",
        transactionHash: receipt.hash,
        blockNumber: receipt.blockNumber,
      });
      continue;
    }
    if (confirmed.status !== 1) {
      record = await ctx.records.save({ ...record, status: "reverted", revertedHash: confirmed.hash });
      await nameMined(ctx, job, confirmed.hash);
      throw revertedError(ctx, "the transaction was re-mined and reverted (receipt status 0)", record, confirmed);
    }
    const result: TxJobResult = { transactionHash: confirmed.hash, blockNumber: confirmed.blockNumber };
    await ctx.records.save({ ...record, status: "confirmed", result });
    await ctx.hooks?.at("after-confirmed-saved", { jobId: job.jobId, nonce: record.nonce });
    job.trace.transactionHash = confirmed.hash;
    await nameMined(ctx, job, confirmed.hash);
    return result;
  }
}

/** Before a rebuild: the state changed since the first estimate (our call may revert now); fail rather than burn gas. */
async function reestimate(ctx: SendContext, call: TxCall): Promise<void> {
  await ctx.provider.estimateGas({ from: ctx.from, to: call.to, data: call.data, value: BigInt(call.value) });
}

function assertSameJob(record: TxRecord, job: SendJob, from: string): void {
  if (record.dataHash !== job.dataHash || record.jobName !== job.jobName) {
    throw new TxRecordMismatchError("a transaction record exists for this job id with different job data", {
      jobId: job.jobId,
      recordJobName: record.jobName,
    });
  }
  if (record.from !== from) {
    // Another key cannot replace, bump or even observe the nonce of the first key's transaction.
    throw new TxRecordMismatchError(
      "the job's transaction was sent by another signer; the signer key changed while it was in flight",
      {
        jobId: job.jobId,
        recordFrom: record.from,
        signer: from,
      },
    );
  }
}

function revertedError(
  ctx: SendContext,
  message: string,
  record: TxRecord,
  receipt?: TransactionReceipt,
): TransactionRevertedError {
  return new TransactionRevertedError(message, {
    chainId: ctx.chainId,
    nonce: record.nonce,
    transactionHash: receipt?.hash,
    blockNumber: receipt?.blockNumber,
  });
}

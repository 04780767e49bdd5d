import { InsufficientFundsError, toChainError } from "../../../shared/chain/errors";
import { bumpFee, feeFromJson, feeToJson, isAtCeiling, sameFee, type Fee } from "../../../shared/protocol/gas";
import { broadcastAttempt, persistNewAttempt, rebroadcastLatest, recordError } from "./attempts";
import type { SendContext, SendJob } from "./send-context";
import { SenderLeaseLostError } from "./errors";
import { feeCeilingOf, latestAttempt, type TxRecord } from "./tx-record";
import { routerMetrics } from "../../../shared/metrics/router-metrics";

/**
 * Called when the newest attempt has waited `confirmationTimeoutMs` without a receipt. Replaces it at the
 * same nonce with a higher fee while bumps remain, bumping is not halted and the fee is below the ceiling;
 * otherwise rebroadcasts it (a node may have dropped it) and keeps waiting. A refused bump is recorded and
 * never retried at once: the next try comes only after another timeout (connext/monorepo#418).
 */
export async function bumpOrRebroadcast(ctx: SendContext, job: SendJob, record: TxRecord): Promise<TxRecord> {
  const latest = latestAttempt(record);
  if (!latest) {
    return record;
  }
  const fee = feeFromJson(latest.fee);
  const maximum = feeCeilingOf(record.call, BigInt(ctx.chain.gasPriceMaximum));
  const mayBump =
    record.bumps < ctx.chain.maxGasBumps && record.bumpsHaltedBy === undefined && !isAtCeiling(fee, maximum);
  if (mayBump) {
    const network = await ctx.gasPrice().catch(() => undefined);
    const next = bumpFee(fee, ctx.chain.gasBumpPercent, maximum, network);
    if (!sameFee(next, fee)) {
      return bump(ctx, job, record, next);
    }
  }
  ctx.logger.info("transaction still unmined, not bumping: rebroadcasting it", {
    at: "submitter.bump",
    transactionHash: latest.hash,
    nonce: record.nonce,
    bumps: record.bumps,
    maxGasBumps: ctx.chain.maxGasBumps,
    atCeiling: isAtCeiling(fee, maximum),
    bumpsHaltedBy: record.bumpsHaltedBy,
  });
  await rebroadcastLatest(ctx, job, record);
  return record;
}

async function bump(ctx: SendContext, job: SendJob, record: TxRecord, fee: Fee): Promise<TxRecord> {
  const replaced = latestAttempt(record);
  const { record: saved, attempt } = await persistNewAttempt(ctx, record, {
    nonce: record.nonce,
    fee,
    bumps: record.bumps + 1,
  });
  job.trace.bumps = saved.bumps;
  await ctx.hooks?.at("bump-persisted", { jobId: job.jobId, nonce: attempt.nonce });
  try {
    await broadcastAttempt(ctx, job, attempt);
    routerMetrics().txReplaced.inc({ chain: String(ctx.chainId), operation: job.jobName });
    ctx.logger.info("fee bumped", {
      at: "submitter.bump",
      transactionHash: attempt.hash,
      replaces: replaced?.hash,
      nonce: attempt.nonce,
      bumps: saved.bumps,
      fee: feeToJson(fee),
    });
    return saved;
  } catch (err) {
    if (err instanceof SenderLeaseLostError) {
      throw err;
    }
    const chainError = toChainError(err);
    if (chainError instanceof InsufficientFundsError) {
      ctx.logger.error(
        "the signer cannot pay for a fee bump: bumping stopped, waiting for what was sent; top up the signer",
        {
          at: "submitter.bump",
          alert: true,
          nonce: attempt.nonce,
          transactionHash: replaced?.hash,
          code: chainError.code,
        },
      );
      return recordError(ctx, saved, chainError, { bumpsHaltedBy: chainError.code });
    }
    ctx.logger.warn("fee bump refused; waiting for the next timeout", {
      at: "submitter.bump",
      nonce: attempt.nonce,
      transactionHash: attempt.hash,
      code: chainError.code,
    });
    return recordError(ctx, saved, chainError);
  }
}

import { createHash } from "node:crypto";
import {
  addLiquidityRefusal,
  encodeErc20Approve,
  encodeTmAddLiquidityFor,
  isNativeAsset,
  readAddLiquidityState,
  readAllowance,
} from "../../../shared/chain/add-liquidity";
import { RouterError, errorClass } from "../../../shared/errors";
import { type AddLiquidityForJobData } from "../../../shared/queues";
import { approvalRecordId } from "../../../shared/coordination/keys";
import type { SubmitterContext } from "../context";
import type { SendTrace } from "../send/send-context";
import { sendJobTransaction } from "../send/send-transaction";
import type { TxCall } from "../send/tx-record";
import { GAS_LIMIT_HEADROOM_PERCENT } from "./estimated-call";

/**
 * After its approval was mined, the allowance read does not cover the add: a lagging provider (retried), or another
 * add of the same asset used it up (fails once the attempts run out; a new request approves again).
 */
export class AllowanceShortError extends errorClass(RouterError, "ALLOWANCE_SHORT", "retriable") {}

/**
 * The call an add-liquidity-for job sends (the router's wallet pays, `data.router` is credited):
 * 1. the TransactionManager would take it: the router approved (`#AL:003`), the asset approved (`#AL:004`), the
 *    wallet holding `amount`; else the job fails there (ROUTER_NOT_APPROVED, ASSET_NOT_APPROVED,
 *    INSUFFICIENT_WALLET_BALANCE), before any nonce is used;
 * 2. ERC-20 only, when the allowance to the TransactionManager lacks: `approve(TransactionManager, amount)`, sent,
 *    mined and confirmed through its own send record (`<jobId>-approve`) before the add is built. Approving
 *    exactly `amount` gives no more than this add spends. Crash-safe: a re-run resumes an unfinished approval
 *    record (never a second approval); a re-run after it is confirmed finds the allowance covering the amount and
 *    sends none;
 * 3. `addLiquidityFor(amount, assetId, router)`, the native asset as the call's value, checked with
 *    eth_estimateGas (a revert fails the job before its nonce). Not replay-protected: a second add would add
 *    twice, so the pipeline proves a nonce taken before it ever rebuilds (send/confirm-nonce-taken.ts).
 */
export async function buildAddLiquidityForCall(
  ctx: SubmitterContext,
  jobId: string,
  data: AddLiquidityForJobData,
): Promise<TxCall> {
  const tm = ctx.chain.transactionManagerAddress;
  const amount = BigInt(data.amount);
  const state = await readAddLiquidityState(ctx.provider, {
    transactionManager: tm,
    router: data.router,
    assetId: data.assetId,
    wallet: ctx.from,
  });
  const refusal = addLiquidityRefusal(state, {
    chainId: ctx.chainId,
    assetId: data.assetId,
    router: data.router,
    amount,
  });
  if (refusal) {
    throw refusal;
  }
  const native = isNativeAsset(data.assetId);
  // An approval an earlier run of this job sent is resumed even when the allowance now shows it: an unfinished one
  // is finished (mined, confirmed), a finished one returns its stored result and is named to the ledger again (a
  // run stopped between the approval and the add may not have named it).
  // A reverted one failed its job already, named before it did.
  const earlierStatus = (await ctx.records.load(approvalRecordId(jobId)))?.status;
  const earlier = earlierStatus !== undefined && earlierStatus !== "reverted";
  if (!native && ((state.allowance ?? 0n) < amount || earlier)) {
    await approve(ctx, jobId, data, amount);
    const allowance = await readAllowance(ctx.provider, data.assetId, ctx.from, tm);
    if (allowance < amount) {
      throw new AllowanceShortError(
        `the allowance to the TransactionManager is ${allowance.toString()} after this job's approval, below ${data.amount}`,
        { assetId: data.assetId, allowance: allowance.toString(), amount: data.amount },
      );
    }
  }
  const callData = encodeTmAddLiquidityFor({ amount, assetId: data.assetId, router: data.router });
  return estimatedCallWithValue(ctx, tm, callData, native ? amount : 0n);
}

/** Step 2: the approval as a transaction of its own, resumable from its record like any job's. */
async function approve(
  ctx: SubmitterContext,
  jobId: string,
  data: AddLiquidityForJobData,
  amount: bigint,
): Promise<void> {
  const tm = ctx.chain.transactionManagerAddress;
  const approvalId = approvalRecordId(jobId);
  const trace: SendTrace = {};
  const result = await sendJobTransaction(
    ctx,
    {
      jobId: approvalId,
      jobName: "erc20-approve",
      dataHash: createHash("sha256")
        .update(JSON.stringify([data.chainId, data.assetId.toLowerCase(), tm.toLowerCase(), data.amount]))
        .digest("hex"),
      // The job's broadcast is the add: the admin API answers with that hash, not the approval's.
      reportBroadcast: async () => undefined,
      trace,
      ledgerEntry: { kind: "approve", ...(data.requestId !== undefined ? { requestId: data.requestId } : {}) },
    },
    async () => estimatedCallWithValue(ctx, data.assetId, encodeErc20Approve(tm, amount), 0n),
  );
  ctx.logger.info("allowance to the TransactionManager approved", {
    at: "submitter.addLiquidityFor",
    approvalRecord: approvalId,
    transactionHash: result.transactionHash,
    assetId: data.assetId,
    amount: data.amount,
  });
}

/** estimated-call.ts's rule (a revert throws before any nonce; the estimate plus headroom) for a call with value. */
async function estimatedCallWithValue(ctx: SubmitterContext, to: string, data: string, value: bigint): Promise<TxCall> {
  const estimate = await ctx.provider.estimateGas({ from: ctx.from, to, data, value });
  return {
    to,
    data,
    value: value.toString(),
    gasLimit: ((estimate * (100n + GAS_LIMIT_HEADROOM_PERCENT)) / 100n).toString(),
  };
}

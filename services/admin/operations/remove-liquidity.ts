import { withTimeout } from "../../../shared/timing";
import { TX_JOB } from "../../../shared/queues";
import type { OperationContext, RemoveLiquidityRequest, TransactionResponse } from "../types";
import { PRE_ENQUEUE_READ_TIMEOUT_MS, type ContentClaimDeps } from "./content-claim";
import type { TxRequestDeps } from "./enqueue-and-wait";
import { moneyRequest } from "./money-request";
import { BalanceUnavailableError, InsufficientLiquidityError } from "./errors";

export { DEFAULT_BROADCAST_TIMEOUT_MS } from "./enqueue-and-wait";

export interface RemoveLiquidityDeps extends ContentClaimDeps, TxRequestDeps {
  /** The router's unlocked liquidity in the TransactionManager, base units. */
  readUnlockedBalance(chainId: number, assetId: string): Promise<bigint>;
}

export type RemoveLiquidityOperation = (
  params: RemoveLiquidityRequest,
  ctx: OperationContext,
) => Promise<TransactionResponse>;

/**
 * Checks the unlocked balance, enqueues one remove-liquidity job keyed by the request id, and answers with
 * the transaction hash as soon as the submitter reports the broadcast (never waiting for confirmations).
 * Idempotent twice over:
 * - a retry with the same request id finds the same job and waits on it instead of enqueuing again;
 * - a request identical in content (chain, asset, amount, recipient) to one accepted in the last
 *   CONTENT_CLAIM_WINDOW_MS (any request id,
 *   e.g. a retry after a 504 without X-Request-Id) is answered by that job (claimContent), unless it failed with
 *   nothing on chain (no send record, or its transaction reverted).
 */
export function createRemoveLiquidityOperation(deps: RemoveLiquidityDeps): RemoveLiquidityOperation {
  return (params, ctx) =>
    moneyRequest(deps, ctx, {
      kind: TX_JOB.removeLiquidity,
      chainId: params.chainId,
      data: { ...params, requestId: ctx.requestId },
      contentFields: [params.chainId, params.assetId, params.amount, params.recipientAddress],
      check: () => assertUnlockedBalance(deps, params),
      at: "admin.removeLiquidity",
      logged: { assetId: params.assetId, amount: params.amount, recipientAddress: params.recipientAddress },
    });
}

async function assertUnlockedBalance(deps: RemoveLiquidityDeps, params: RemoveLiquidityRequest): Promise<void> {
  let unlocked: bigint;
  try {
    unlocked = await withTimeout(deps.readUnlockedBalance(params.chainId, params.assetId), PRE_ENQUEUE_READ_TIMEOUT_MS);
  } catch (err) {
    throw new BalanceUnavailableError(
      `could not read the router's unlocked balance on chain ${params.chainId}`,
      { chainId: params.chainId, assetId: params.assetId },
      { cause: err },
    );
  }
  const amount = BigInt(params.amount);
  if (unlocked < amount) {
    throw new InsufficientLiquidityError(
      `unlocked balance ${unlocked.toString()} is below the requested amount ${amount.toString()}`,
      { chainId: params.chainId, assetId: params.assetId, unlocked: unlocked.toString(), amount: amount.toString() },
    );
  }
}

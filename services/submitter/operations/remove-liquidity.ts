import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { encodeRouterRemoveLiquidity, encodeTmRemoveLiquidity } from "../../../shared/chain/contracts";
import type { ChainConfig, RouterConfig } from "../../../shared/config/types";
import type { Logger } from "../../../shared/logging/create-logger";
import { signRemoveLiquidity } from "../../../shared/protocol/router-signatures";
import type { RemoveLiquidityJobData } from "../../../shared/queues";
import type { RouterSigner } from "../../../shared/signer/router-signer";
import type { JobLiquidity } from "../liquidity-in-flight";
import type { TxCall, TxNoop, TxRecordStore } from "../send/tx-record";
import { LiquidityInFlightError, LIQUIDITY_IN_FLIGHT_RETRY_MS } from "./errors";
import { estimatedCall } from "./estimated-call";
import { findOwnWithdrawal } from "./find-own-withdrawal";
import { holdLiquidity } from "./hold-liquidity";

export interface OperationContext {
  readonly config: RouterConfig;
  readonly chain: ChainConfig;
  readonly provider: Pick<
    ChainProvider,
    "estimateGas" | "call" | "getBlockNumber" | "getBlock" | "getTransactionCount" | "read"
  >;
  /** The send records' nonce-jobs index: which job sent each nonce (step 1). */
  readonly records: Pick<TxRecordStore, "unnamedNonces">;
  readonly signer: Pick<RouterSigner, "signMessage">;
  /** The signer's address: the sender, and the router in direct mode. */
  readonly from: string;
  readonly logger: Logger;
  /** This job's liquidity hold (absent outside a submitter: no holds). */
  readonly liquidity?: JobLiquidity;
}

/**
 * The call a remove-liquidity job sends (only when the job has no send record: send-transaction.ts):
 * 1. the amount is held until the withdrawal is mined (liquidity-in-flight.ts), so receiving prepares check
 *    against it; when the balance covers it only without the holds of prepares or withdrawals in flight, the
 *    job is parked (LIQUIDITY_IN_FLIGHT) and checks again once they are mined;
 * 2. its own withdrawal is looked for on chain since the job was created (find-own-withdrawal.ts): when found,
 *    nothing is sent and the job completes with that transaction (a record lost in a Redis failover, or a
 *    finished job retried; the run's hold is dropped as for any run that sent nothing); while the signer has
 *    transactions in flight that no record names, it is parked. After step 1, so a job parked there does not
 *    search the logs on every run;
 * 3. checked with eth_estimateGas: a revert (`#RL:008`, not enough unlocked liquidity) fails the job there,
 *    before any nonce is used or gas is spent.
 * - Direct mode: `TransactionManager.removeLiquidity(amount, assetId, recipientAddress)` from the signer.
 * - Router-contract mode: `Router.removeLiquidity(amount, assetId, relayerFeeAsset, 0, signature)` from the
 *   signer (docs/protocol.md#router-contract-calls). The TransactionManager pays the Router's own `recipient`; the
 *   job's recipientAddress cannot change that. The Router skips the signature check for its signer, but the
 *   signature is still the valid one so the same call data would also work relayed.
 */
export async function buildRemoveLiquidityCall(
  ctx: OperationContext,
  data: RemoveLiquidityJobData,
  createdAtMs: number,
): Promise<TxCall | TxNoop> {
  const routerContract = ctx.config.routerContractAddress;
  let to: string;
  let callData: string;
  if (routerContract) {
    ctx.logger.info("router-contract mode: funds go to the Router contract's recipient; recipientAddress is ignored", {
      at: "submitter.removeLiquidity",
      routerContractAddress: routerContract,
      recipientAddress: data.recipientAddress,
    });
    const payload = {
      amount: data.amount,
      assetId: data.assetId,
      routerRelayerFeeAsset: ctx.chain.routerContractRelayerAsset,
      routerRelayerFee: 0n,
      chainId: ctx.chain.chainId,
    };
    to = routerContract;
    callData = encodeRouterRemoveLiquidity({ ...payload, signature: await signRemoveLiquidity(ctx.signer, payload) });
  } else {
    to = ctx.chain.transactionManagerAddress;
    callData = encodeTmRemoveLiquidity({
      amount: data.amount,
      assetId: data.assetId,
      recipient: data.recipientAddress,
    });
  }
  await holdAmount(ctx, data); // 1.
  // 2.
  const found = await findOwnWithdrawal(
    {
      ...ctx,
      transactionManager: ctx.chain.transactionManagerAddress,
      router: routerContract ?? ctx.from,
      matchRecipient: !routerContract,
    },
    data,
    createdAtMs,
  );
  if (found) {
    ctx.logger.warn("the withdrawal is already on chain (its send record is gone): sending nothing", {
      at: "submitter.removeLiquidity",
      transactionHash: found.transactionHash,
      blockNumber: found.blockNumber,
    });
    return {
      noop: true,
      reason: "withdrawal already on chain",
      blockNumber: found.blockNumber,
      transactionHash: found.transactionHash,
    };
  }
  return estimatedCall(ctx, to, callData); // 3.
}

/** Step 1; a balance below the amount itself is left to the estimate (#RL:008, as without holds). */
async function holdAmount(ctx: OperationContext, data: RemoveLiquidityJobData): Promise<void> {
  const amount = BigInt(data.amount);
  const check = await holdLiquidity(ctx, data.assetId, amount);
  if (check.ok || check.balance < amount) {
    return;
  }
  throw new LiquidityInFlightError(
    `unlocked liquidity ${check.balance.toString()} covers the withdrawal only without ${check.heldByOthers.toString()} held by transactions in flight`,
    Date.now() + LIQUIDITY_IN_FLIGHT_RETRY_MS,
    {
      assetId: data.assetId,
      amount: data.amount,
      balance: check.balance.toString(),
      balanceBlock: check.balanceBlock,
      heldByOthers: check.heldByOthers.toString(),
    },
  );
}

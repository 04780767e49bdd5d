import type { ChainProvider } from "../../../shared/chain/chain-provider";
import type { TxCall } from "../send/tx-record";

/**
 * eth_estimateGas is exact for the state it ran against; the state can move (another transfer, a warm slot
 * turning cold) before the transaction is mined. Unused gas is not charged, an out-of-gas revert is.
 */
export const GAS_LIMIT_HEADROOM_PERCENT = 20n;

export interface EstimateContext {
  readonly provider: Pick<ChainProvider, "estimateGas">;
  /** The signer's address: the sender of the call. */
  readonly from: string;
}

/**
 * The call every operation sends, checked with eth_estimateGas first: a revert throws here, before any nonce
 * is used or gas is spent. Its gas limit is the estimate plus GAS_LIMIT_HEADROOM_PERCENT; it sends no value.
 */
export async function estimatedCall(ctx: EstimateContext, to: string, data: string): Promise<TxCall> {
  const estimate = await estimateCallGas(ctx, to, data);
  return { to, data, value: "0", gasLimit: ((estimate * (100n + GAS_LIMIT_HEADROOM_PERCENT)) / 100n).toString() };
}

/** eth_estimateGas of a call without value from the signer: a revert throws (nothing signed yet). */
export function estimateCallGas(ctx: EstimateContext, to: string, data: string): Promise<bigint> {
  return ctx.provider.estimateGas({ from: ctx.from, to, data, value: 0n });
}

import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { decodeRouterBalances, encodeRouterBalances } from "../../../shared/chain/contracts";
import type { ChainConfig, RouterConfig } from "../../../shared/config/types";
import type { HoldCheck, JobLiquidity } from "../liquidity-in-flight";

export interface HoldLiquidityContext {
  readonly config: Pick<RouterConfig, "routerContractAddress">;
  readonly chain: Pick<ChainConfig, "transactionManagerAddress">;
  readonly provider: Pick<ChainProvider, "call" | "getBlockNumber">;
  readonly from: string;
  readonly liquidity?: JobLiquidity;
}

/**
 * Holds `amount` of the router's unlocked liquidity for the job's transaction, if the balance net of the
 * chain's other holds covers it (liquidity-in-flight.ts). The balance is read on chain at an explicit block,
 * never from a cache, nor inferred from eth_estimateGas: an RPC may estimate against `latest`, which does not
 * show our own pending transactions; the holds do. Without holds (outside a submitter) only the balance counts.
 */
export async function holdLiquidity(ctx: HoldLiquidityContext, assetId: string, amount: bigint): Promise<HoldCheck> {
  const readBalance = async (): Promise<{ balance: bigint; block: number }> => {
    const block = await ctx.provider.getBlockNumber();
    const router = ctx.config.routerContractAddress ?? ctx.from;
    const data = await ctx.provider.call(
      { to: ctx.chain.transactionManagerAddress, data: encodeRouterBalances(router, assetId) },
      block,
    );
    return { balance: decodeRouterBalances(data), block };
  };
  if (ctx.liquidity) {
    return ctx.liquidity.checkAndHold({ assetId, amount, readBalance });
  }
  const at = await readBalance();
  return at.balance >= amount
    ? { ok: true }
    : { ok: false, balance: at.balance, balanceBlock: at.block, heldByOthers: 0n };
}

import type { PollerContext } from "./context";

/**
 * Writes the router's unlocked liquidity per pool asset and the signer's native balance into Redis, read
 * from the chain (routerBalances / eth_getBalance). All values share one timestamp.
 */
export async function refreshBalances(ctx: PollerContext): Promise<void> {
  const updatedAtMs = Date.now();
  for (const assetId of ctx.poolAssets) {
    const amount = await ctx.readRouterBalance(ctx.chainId, assetId);
    await ctx.balances.setRouterBalance(ctx.chainId, assetId, amount, updatedAtMs);
  }
  const gas = await ctx.provider.getBalance(ctx.signerAddress);
  await ctx.balances.setGasBalance(ctx.chainId, gas, updatedAtMs);
}

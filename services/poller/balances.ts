import type { PollerContext } from "./context";

/**
 * Writes the router's unlocked liquidity per pool asset and the signer's native balance into Redis, read
 * from the chain (routerBalances / eth_getBalance). All values share one timestamp. The reads go out at once
 * (one after another they were a round trip each to the RPC per pool asset); the gas balance is still written
 * last, so its timestamp (what balancesOlderThan reads) is fresh only once every asset's balance is.
 */
export async function refreshBalances(ctx: PollerContext): Promise<void> {
  const updatedAtMs = Date.now();
  const [amounts, gas] = await Promise.all([
    Promise.all(ctx.poolAssets.map((assetId) => ctx.readRouterBalance(ctx.chainId, assetId))),
    ctx.provider.getBalance(ctx.signerAddress),
  ]);
  for (const [i, assetId] of ctx.poolAssets.entries()) {
    await ctx.balances.setRouterBalance(ctx.chainId, assetId, amounts[i], updatedAtMs);
  }
  await ctx.balances.setGasBalance(ctx.chainId, gas, updatedAtMs);
}

import { getAddress } from "ethers";
import type { RouterConfig } from "../../shared/config/types";
import type { PollerContext } from "./context";

/** The assets of this chain that appear in a swap pool: the ones the auction needs liquidity figures for. */
export function poolAssetsOf(config: RouterConfig, chainId: number): string[] {
  const assets = new Set<string>();
  for (const pool of config.swapPools) {
    for (const asset of pool.assets) {
      if (asset.chainId === chainId) {
        assets.add(getAddress(asset.assetId));
      }
    }
  }
  return [...assets];
}

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

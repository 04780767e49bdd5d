import { getAddress } from "ethers";
import type { RouterConfig } from "./types";

/**
 * The chains that share a swap pool with `chainId` (without it), in config order: the chains a transfer through
 * `chainId` comes from or goes to, so the ones whose queue and provider its processes read.
 */
export function poolPartnersOf(config: Pick<RouterConfig, "swapPools">, chainId: number): number[] {
  const partners = new Set<number>();
  for (const pool of config.swapPools) {
    if (!pool.assets.some((asset) => asset.chainId === chainId)) continue;
    for (const asset of pool.assets) {
      if (asset.chainId !== chainId) partners.add(asset.chainId);
    }
  }
  return [...partners];
}

/** The chain's assets that appear in a swap pool (checksummed, each once): the ones with liquidity figures. */
export function poolAssetsOf(config: Pick<RouterConfig, "swapPools">, chainId: number): string[] {
  const assets = new Set<string>();
  for (const pool of config.swapPools) {
    for (const asset of pool.assets) {
      if (asset.chainId === chainId) assets.add(getAddress(asset.assetId));
    }
  }
  return [...assets];
}

import { SwapPoolLike } from "./types";

export interface PoolAsset {
  chainId: number;
  assetId: string;
}

/**
 * docs/protocol.md#auction step 3: a swap is supported when one pool holds both the sending and the receiving asset.
 * Chain ids are compared exactly, addresses case-insensitively (the original compares checksum-normalised forms).
 */
export function isSwapSupported(pools: readonly SwapPoolLike[], sending: PoolAsset, receiving: PoolAsset): boolean {
  return pools.some((pool) => poolHolds(pool, sending) && poolHolds(pool, receiving));
}

function poolHolds(pool: SwapPoolLike, wanted: PoolAsset): boolean {
  const assetId = wanted.assetId.toLowerCase();
  return pool.assets.some((asset) => asset.chainId === wanted.chainId && asset.assetId.toLowerCase() === assetId);
}

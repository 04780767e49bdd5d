import { isRecord } from "./json-shapes";
import type { ParsedChain } from "./parsed-config";
import type { SwapPool } from "./types";

/** Every pool asset's chain is configured; a pool or asset the schema could not read is skipped. */
export function checkSwapPools(
  pools: readonly SwapPool[] | undefined,
  chains: Record<string, ParsedChain> | undefined,
  problems: string[],
  warnings: string[],
): void {
  if (!Array.isArray(pools)) {
    return;
  }
  if (pools.length === 0) {
    warnings.push("swapPools: no swap pools configured; the router will not bid");
  }
  pools.forEach((pool: unknown, poolIndex) => {
    if (!isRecord(pool) || !Array.isArray(pool.assets)) {
      return;
    }
    const seen = new Set<string>();
    pool.assets.forEach((asset: unknown, assetIndex) => {
      if (!isRecord(asset) || typeof asset.chainId !== "number") {
        return;
      }
      if (isRecord(chains) && !Object.hasOwn(chains, String(asset.chainId))) {
        problems.push(
          `swapPools[${poolIndex}].assets[${assetIndex}].chainId: chain ${asset.chainId} is not in chainConfig`,
        );
      }
      const key = `${asset.chainId}-${String(asset.assetId)}`;
      if (seen.has(key)) {
        warnings.push(
          `swapPools[${poolIndex}].assets[${assetIndex}]: duplicate asset ${String(asset.assetId)} on chain ${asset.chainId}`,
        );
      }
      seen.add(key);
    });
    checkInventory(pool, poolIndex, problems);
  });
}

/** How far a pool's targets may add up from 100 % (rounding of thirds and the like). */
export const INVENTORY_TARGET_SUM_TOLERANCE_PERCENT = 0.01;

/**
 * docs/config.md, "Inventory targets": each key a chain of the pool holding one asset of it, every chain of the
 * pool with an entry, minimum ≤ target, targets adding up to 100 %. Ranges and the floor's digits are the schema's.
 */
function checkInventory(pool: Record<string, unknown>, poolIndex: number, problems: string[]): void {
  const inventory = pool.inventory;
  if (!isRecord(inventory) || !Array.isArray(pool.assets)) {
    return;
  }
  const path = `swapPools[${poolIndex}].inventory`;
  const assetsPerChain = new Map<string, number>();
  for (const asset of pool.assets as unknown[]) {
    if (isRecord(asset) && typeof asset.chainId === "number") {
      const chain = String(asset.chainId);
      assetsPerChain.set(chain, (assetsPerChain.get(chain) ?? 0) + 1);
    }
  }
  let sum = 0;
  for (const [chain, target] of Object.entries(inventory)) {
    const count = assetsPerChain.get(chain);
    if (count === undefined) {
      problems.push(`${path}.${chain}: chain ${chain} has no asset in this pool`);
    } else if (count > 1) {
      problems.push(`${path}.${chain}: the pool has ${count} assets on chain ${chain}; a target needs exactly one`);
    }
    if (!isRecord(target)) continue;
    const { targetPercent, minimumPercent } = target;
    if (typeof targetPercent === "number") sum += targetPercent;
    if (typeof targetPercent === "number" && typeof minimumPercent === "number" && minimumPercent > targetPercent) {
      problems.push(
        `${path}.${chain}.minimumPercent: ${minimumPercent} is above the chain's targetPercent ${targetPercent}`,
      );
    }
  }
  for (const chain of assetsPerChain.keys()) {
    if (!Object.hasOwn(inventory, chain)) {
      problems.push(`${path}.${chain}: chain ${chain} of the pool has no target (every chain of the pool needs one)`);
    }
  }
  if (Math.abs(sum - 100) > INVENTORY_TARGET_SUM_TOLERANCE_PERCENT) {
    problems.push(`${path}: the chains' targetPercent add up to ${sum}, not 100`);
  }
}

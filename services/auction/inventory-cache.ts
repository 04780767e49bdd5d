import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import { assessPool, receivingKeep, toCommon } from "../../shared/protocol/inventory";
import { readInventory, inventoryPools, type InventoryReadDeps } from "../../shared/transfers/inventory-reads";
import { abortableDelay } from "../../shared/timing";

/**
 * How often the auction re-reads the pools' inventory figures. The bid path reads the receiving chain's balance
 * and hard holds in the reservation script itself; only the other chains' totals come from here, and they move
 * with the pollers' balance writes (a tick, 1 s at the defaults) and the claims, so a few seconds is close enough
 * for a share rule of whole percents.
 */
export const INVENTORY_REFRESH_MS = 5_000;

export interface KeepParams {
  readonly sendingChainId: number;
  readonly sendingAssetId: string;
  readonly receivingChainId: number;
  readonly receivingAssetId: string;
  /** The request's amount, sending-asset units. */
  readonly amount: bigint;
  readonly inputDecimals: number;
  readonly outputDecimals: number;
}

/**
 * The auction's view of the inventory targets (docs/auction.md, "Inventory decline"): per pool with targets, the
 * other chains' totals, refreshed off the bid path. `keepFor` is map lookups and a few bigint operations.
 */
export interface InventoryCache {
  /**
   * What the receiving chain must still hold (net of hard holds) after this bid, its base units; undefined when
   * the pool has no targets or the figures have not been read yet (the rule then does not apply: it is a
   * preference, not a safety check, and must not stop a fresh instance from bidding).
   */
  keepFor(p: KeepParams): bigint | undefined;
  /** One read of every pool's figures (exported for tests and the bench). */
  refresh(): Promise<void>;
}

interface Route {
  readonly poolIndex: number;
  readonly receivingChainId: number;
  readonly minimumPercent: number;
  readonly floor: bigint;
}

export function createInventoryCache(p: {
  readonly config: RouterConfig;
  readonly reads: InventoryReadDeps;
  /** Decimals from the fee cache (the refreshers read them once per asset). */
  readonly decimals: (chainId: number, assetId: string) => number | undefined;
  readonly nowMs: () => number;
}): InventoryCache {
  // sending "chain:asset" → receiving "chain:asset" → route, built once from the config.
  const routes = new Map<string, Map<string, Route>>();
  for (const { pool, index, inventory } of inventoryPools(p.config)) {
    for (const from of pool.assets) {
      const fromKey = assetKeyOf(from.chainId, from.assetId);
      const byReceiving = routes.get(fromKey) ?? new Map<string, Route>();
      routes.set(fromKey, byReceiving);
      for (const to of pool.assets) {
        if (to === from) continue;
        const target = inventory[String(to.chainId)];
        byReceiving.set(assetKeyOf(to.chainId, to.assetId), {
          poolIndex: index,
          receivingChainId: to.chainId,
          minimumPercent: target.minimumPercent,
          floor: BigInt(target.floor),
        });
      }
    }
  }
  // poolIndex → chainId → that chain's total (COMMON_DECIMALS), and the pool's sum.
  let totals = new Map<number, { byChain: Map<number, bigint>; sum: bigint }>();

  return {
    keepFor: (k) => {
      if (routes.size === 0) return undefined;
      const route = routes
        .get(assetKeyOf(k.sendingChainId, k.sendingAssetId))
        ?.get(assetKeyOf(k.receivingChainId, k.receivingAssetId));
      if (route === undefined) return undefined;
      const pool = totals.get(route.poolIndex);
      const own = pool?.byChain.get(route.receivingChainId);
      if (pool === undefined || own === undefined) return undefined;
      return receivingKeep({
        othersCommon: pool.sum - own,
        incomingCommon: toCommon(k.amount, k.inputDecimals),
        minimumPercent: route.minimumPercent,
        floor: route.floor,
        decimals: k.outputDecimals,
      });
    },
    refresh: async () => {
      if (routes.size === 0) return;
      const next = new Map<number, { byChain: Map<number, bigint>; sum: bigint }>();
      for (const pool of await readInventory(p.reads, p.nowMs())) {
        const decimals = pool.chains.map((c) => p.decimals(c.chainId, c.assetId));
        if (decimals.some((d) => d === undefined)) continue; // not read yet: this pool's rule waits for them
        const assessed = assessPool(pool.chains.map((c, i) => ({ ...c, decimals: decimals[i] as number })));
        const byChain = new Map(assessed.map((c) => [c.chainId, c.totalCommon]));
        next.set(pool.poolIndex, { byChain, sum: assessed.reduce((s, c) => s + c.totalCommon, 0n) });
      }
      totals = next;
    },
  };
}

/** Refreshes the cache until `signal` aborts; a failed read keeps the last figures and is logged once a minute. */
export async function runInventoryRefresher(
  cache: InventoryCache,
  logger: Logger,
  signal: AbortSignal,
  intervalMs = INVENTORY_REFRESH_MS,
): Promise<void> {
  const logFailure = throttledErrorLog(logger, "inventory figures could not be read", { at: "auction.inventory" });
  while (!signal.aborted) {
    await cache.refresh().catch((err: Error) => logFailure(err));
    await abortableDelay(intervalMs, signal);
  }
}

function assetKeyOf(chainId: number, assetId: string): string {
  return `${chainId}:${assetId.toLowerCase()}`;
}

import type { RouterConfig, SwapPool } from "../config/types";
import type { ChainFigures, ChainTarget } from "../protocol/inventory";
import type { TransferRecord } from "../protocol/types";
import type { BidReservations } from "./bid-reservations";
import type { BalanceStore } from "./balance-store";
import type { TransferStore } from "./transfer-store";

/**
 * The figures of docs/config.md "Inventory targets", read from what the processes already keep in Redis (no chain
 * read): the pollers' `routerBalances` cache (unlocked), the bid reservations (promised: live unprepared bids and
 * hard holds of seen sending prepares), and the transfer store's open records (locked: our receiving prepares;
 * owed: users' sending prepares to us whose receiving side is not cancelled). The submitter's liquidity holds are
 * not added: a receiving prepare's hold overlaps its hard hold (the poller keeps that until the balance shows the
 * prepare), and a withdrawal in flight is the operator's own move. Read by the admin API, its gauges and the
 * auction's inventory cache: one reader, so all three show the same numbers.
 */
export interface PoolChainFigures extends Omit<ChainFigures, "decimals">, ChainTarget {
  /** When the poller last wrote the balance (ms); undefined when it never did (unlocked then reads 0). */
  readonly balanceUpdatedAtMs: number | undefined;
}

export interface PoolFigures {
  readonly poolIndex: number;
  readonly name: string;
  readonly chains: readonly PoolChainFigures[];
}

export interface InventoryReadDeps {
  readonly config: RouterConfig;
  readonly balances: BalanceStore;
  readonly reservations: Pick<BidReservations, "promises">;
  readonly transfers: Pick<TransferStore, "listOpen" | "getMany">;
}

/** The pools that have `inventory` set, with their index in `swapPools`. */
export function inventoryPools(config: Pick<RouterConfig, "swapPools">): Array<{
  pool: SwapPool;
  index: number;
  inventory: NonNullable<SwapPool["inventory"]>;
}> {
  return config.swapPools.flatMap((pool, index) =>
    pool.inventory === undefined ? [] : [{ pool, index, inventory: pool.inventory }],
  );
}

/** Every pool with inventory targets, each chain's figures in its asset's base units. */
export async function readInventory(deps: InventoryReadDeps, nowMs = Date.now()): Promise<PoolFigures[]> {
  const pools = inventoryPools(deps.config);
  if (pools.length === 0) return [];
  const chainIds = new Set(pools.flatMap(({ pool }) => pool.assets.map((a) => a.chainId)));
  const inFlight = await readInFlight(deps.transfers, [...chainIds]);
  return Promise.all(
    pools.map(async ({ pool, index, inventory }) => ({
      poolIndex: index,
      name: pool.name ?? `swapPools[${index}]`,
      chains: await Promise.all(
        pool.assets.map(async (asset): Promise<PoolChainFigures> => {
          const target = inventory[String(asset.chainId)];
          const assetId = asset.assetId.toLowerCase();
          const [balance, promises] = await Promise.all([
            deps.balances.getRouterBalance(asset.chainId, assetId),
            deps.reservations.promises(asset.chainId, assetId, nowMs),
          ]);
          let promised = 0n;
          for (const amount of promises.byTransfer.values()) promised += amount;
          const side = inFlight.get(sideKey(asset.chainId, assetId));
          return {
            chainId: asset.chainId,
            assetId,
            unlocked: balance?.amount ?? 0n,
            locked: side?.locked ?? 0n,
            promised,
            owed: side?.owed ?? 0n,
            targetPercent: target.targetPercent,
            minimumPercent: target.minimumPercent,
            floor: BigInt(target.floor),
            balanceUpdatedAtMs: balance?.updatedAtMs,
          };
        }),
      ),
    })),
  );
}

interface InFlight {
  locked: bigint;
  owed: bigint;
}

function sideKey(chainId: number, assetId: string): string {
  return `${chainId}:${assetId.toLowerCase()}`;
}

/** Locked and owed per (chain, asset), from the open records of the given chains. */
async function readInFlight(
  transfers: InventoryReadDeps["transfers"],
  chainIds: readonly number[],
): Promise<Map<string, InFlight>> {
  const open = (await Promise.all(chainIds.map((chainId) => transfers.listOpen(chainId)))).flat();
  const sending = open.filter((r) => r.chainId === r.txData.sendingChainId);
  // A sending side whose receiving side was cancelled goes back to the user: not owed.
  const receivingSides = await transfers.getMany(
    sending.map((r) => ({
      chainId: r.txData.receivingChainId,
      transactionId: r.txData.transactionId,
      user: r.txData.user,
    })),
  );
  const out = new Map<string, InFlight>();
  const add = (record: TransferRecord, assetId: string, field: keyof InFlight): void => {
    const key = sideKey(record.chainId, assetId);
    const entry = out.get(key) ?? { locked: 0n, owed: 0n };
    entry[field] += BigInt(record.txData.amount);
    out.set(key, entry);
  };
  sending.forEach((record, i) => {
    if (receivingSides[i]?.status !== "Cancelled") add(record, record.txData.sendingAssetId, "owed");
  });
  for (const record of open) {
    if (record.chainId === record.txData.receivingChainId) add(record, record.txData.receivingAssetId, "locked");
  }
  return out;
}

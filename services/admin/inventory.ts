import type { ChainProvider } from "../../shared/chain/chain-provider";
import { getGasPrice } from "../../shared/chain/gas-price";
import { createDecimalsReader, type DecimalsReader } from "../../shared/chain/router-balances";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import type { Observability } from "../../shared/metrics/process-observability";
import { routerMetrics } from "../../shared/metrics/router-metrics";
import { feeCap } from "../../shared/protocol/gas";
import {
  assessPool,
  planRebalance,
  type ChainInventory,
  type GasStep,
  type RebalanceMove,
} from "../../shared/protocol/inventory";
import { readInventory, type InventoryReadDeps, type PoolChainFigures } from "../../shared/transfers/inventory-reads";
import { AdminApiError } from "./errors";

/** GET /inventory: one pool's chains, amounts as base-unit decimal strings. */
export interface InventoryPoolView {
  readonly pool: string;
  readonly poolIndex: number;
  readonly chains: ReadonlyArray<{
    readonly chainId: number;
    readonly assetId: string;
    readonly decimals: number;
    readonly unlocked: string;
    readonly locked: string;
    readonly promised: string;
    readonly owed: string;
    readonly total: string;
    /** Percent of the pool's total; null when the pool holds nothing. */
    readonly sharePercent: number | null;
    readonly targetPercent: number;
    readonly minimumPercent: number;
    readonly floor: string;
    readonly state: ChainInventory["state"];
    readonly balanceUpdatedAtMs: number | null;
  }>;
}

export interface RebalancePlanView {
  readonly bridging: "operator";
  readonly note: string;
  readonly pools: ReadonlyArray<{
    readonly pool: string;
    readonly poolIndex: number;
    readonly needed: boolean;
    readonly moves: ReadonlyArray<{
      readonly from: { readonly chainId: number; readonly assetId: string; readonly amount: string };
      readonly to: { readonly chainId: number; readonly assetId: string; readonly amount: string };
      readonly steps: ReadonlyArray<{
        readonly chainId: number;
        readonly step: string;
        readonly gasLimit: string;
        readonly gasPriceWei: string | null;
        readonly costWei: string | null;
      }>;
    }>;
  }>;
}

export interface InventoryReader {
  inventory(): Promise<InventoryPoolView[]>;
  plan(): Promise<RebalancePlanView>;
}

export interface InventoryReaderDeps extends InventoryReadDeps {
  readonly config: RouterConfig;
  readonly providerOf: (chainId: number) => ChainProvider;
  readonly logger: Logger;
}

const PLAN_NOTE =
  "The router does not bridge. For each move: POST /remove-liquidity on the source chain, bridge the amount " +
  "yourself, then POST /add-liquidity-for on the destination chain. costWei covers the router's two transactions only.";

/**
 * The figures of every pool with inventory targets (shared/transfers/inventory-reads.ts, from Redis) with each
 * asset's decimals (read once per asset from its chain) and, for the plan, each chain's current gas price.
 */
export function createInventoryReader(deps: InventoryReaderDeps): InventoryReader {
  const decimalsReaders = new Map<number, DecimalsReader>();
  const decimalsOf = (chainId: number, assetId: string): Promise<number> => {
    let reader = decimalsReaders.get(chainId);
    if (reader === undefined) {
      reader = createDecimalsReader(deps.providerOf(chainId));
      decimalsReaders.set(chainId, reader);
    }
    return reader(assetId);
  };

  const assess = async (): Promise<
    Array<{ pool: string; poolIndex: number; chains: Array<ChainInventory & PoolChainFigures> }>
  > => {
    let figures;
    try {
      figures = await readInventory(deps);
    } catch (err) {
      throw new AdminApiError("INVENTORY_UNAVAILABLE", "the inventory could not be read from Redis", { cause: err });
    }
    return Promise.all(
      figures.map(async (pool) => {
        let decimals: number[];
        try {
          decimals = await Promise.all(pool.chains.map((c) => decimalsOf(c.chainId, c.assetId)));
        } catch (err) {
          throw new AdminApiError("CHAIN_UNAVAILABLE", `the decimals of pool ${pool.name}'s assets could not be read`, {
            cause: err,
          });
        }
        return {
          pool: pool.name,
          poolIndex: pool.poolIndex,
          chains: assessPool(pool.chains.map((c, i) => ({ ...c, decimals: decimals[i] }))),
        };
      }),
    );
  };

  const gasPrices = async (chainIds: readonly number[]): Promise<Map<number, bigint>> => {
    const out = new Map<number, bigint>();
    await Promise.all(
      chainIds.map(async (chainId) => {
        const chain = deps.config.chainConfig[String(chainId)];
        try {
          out.set(
            chainId,
            feeCap(await getGasPrice(chain, { provider: deps.providerOf(chainId), logger: deps.logger })),
          );
        } catch {
          // Left out: the step shows costWei null rather than the plan failing for one chain's RPC.
        }
      }),
    );
    return out;
  };

  return {
    inventory: async () =>
      (await assess()).map((pool) => ({
        pool: pool.pool,
        poolIndex: pool.poolIndex,
        chains: pool.chains.map((c) => ({
          chainId: c.chainId,
          assetId: c.assetId,
          decimals: c.decimals,
          unlocked: c.unlocked.toString(),
          locked: c.locked.toString(),
          promised: c.promised.toString(),
          owed: c.owed.toString(),
          total: c.total.toString(),
          sharePercent: c.sharePercent ?? null,
          targetPercent: c.targetPercent,
          minimumPercent: c.minimumPercent,
          floor: c.floor.toString(),
          state: c.state,
          balanceUpdatedAtMs: c.balanceUpdatedAtMs ?? null,
        })),
      })),
    plan: async () => {
      const pools = await assess();
      const prices = await gasPrices([...new Set(pools.flatMap((p) => p.chains.map((c) => c.chainId)))]);
      return {
        bridging: "operator",
        note: PLAN_NOTE,
        pools: pools.map((pool) => {
          const plan = planRebalance(pool.chains, prices);
          return { pool: pool.pool, poolIndex: pool.poolIndex, needed: plan.needed, moves: plan.moves.map(moveView) };
        }),
      };
    },
  };
}

function moveView(move: RebalanceMove): RebalancePlanView["pools"][number]["moves"][number] {
  const side = (s: RebalanceMove["from"]) => ({ chainId: s.chainId, assetId: s.assetId, amount: s.amount.toString() });
  const step = (g: GasStep) => ({
    chainId: g.chainId,
    step: g.method === "removeLiquidity" ? "POST /remove-liquidity" : "POST /add-liquidity-for",
    gasLimit: g.gasLimit.toString(),
    gasPriceWei: g.gasPrice?.toString() ?? null,
    costWei: g.costWei?.toString() ?? null,
  });
  return { from: side(move.from), to: side(move.to), steps: [step(move.gas[0]), step(move.gas[1])] };
}

/** router_inventory_state's values. */
export const INVENTORY_STATE_VALUE = { ok: 0, low: 1, critical: 2 } as const;

/**
 * The inventory gauges, read at scrape time next to the pollers' router_liquidity: exported by the admin process
 * because a share is a figure across chains (every chain's balance and decimals), which no per-chain process has.
 * A scrape that cannot read them leaves the previous values (the scrape hook's failure is logged by the server).
 */
export function observeInventory(obs: Pick<Observability, "onScrape">, reader: InventoryReader): void {
  const m = routerMetrics();
  obs.onScrape(async () => {
    for (const pool of await reader.inventory()) {
      for (const chain of pool.chains) {
        const labels = { pool: pool.pool, chain: String(chain.chainId) };
        if (chain.sharePercent !== null) m.inventorySharePercent.set(labels, chain.sharePercent);
        m.inventoryMinimumPercent.set(labels, chain.minimumPercent);
        m.inventoryTargetPercent.set(labels, chain.targetPercent);
        m.inventoryState.set(labels, INVENTORY_STATE_VALUE[chain.state]);
      }
    }
  });
}

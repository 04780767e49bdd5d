import type { RouterConfig } from "../../shared/config/types";
import type { BalanceStore } from "../../shared/transfers/balance-store";
import type { FeeEstimator } from "./context";

export interface BidReadinessDeps {
  readonly config: RouterConfig;
  readonly fees: FeeEstimator;
  readonly balances: BalanceStore;
  /** The auction refuses a bid on a balance older than this (the handler's bound). */
  readonly balanceMaxAgeMs: number;
  readonly nowMs: () => number;
}

/** Lists at most this many cold values in the readiness detail: enough to act on, short enough for /status. */
const MAX_LISTED = 4;

/**
 * "Ready" for an auction instance means able to bid: every pool asset on a configured chain has its
 * decimals, fresh prices and gas prices for the fees of both sides, and the pollers have written a fresh router
 * balance of it and a fresh gas balance of its chain. Returns undefined when all are, else a short list of what
 * is cold. PM2's `ready` and /readyz wait on this, so a process manager never routes quotes to an instance that
 * would refuse them for cold data.
 */
export function createBidReadiness(deps: BidReadinessDeps): () => Promise<string | undefined> {
  const assets = poolAssets(deps.config);
  const chains = [...new Set(assets.map((a) => a.chainId))];
  return async () => {
    const nowMs = deps.nowMs();
    const isFresh = (stored: { updatedAtMs: number } | undefined): boolean =>
      stored !== undefined && nowMs - stored.updatedAtMs <= deps.balanceMaxAgeMs;
    const cold: string[] = [];
    for (const { chainId, assetId } of assets) {
      const decimals = deps.fees.decimals(chainId, assetId);
      if (decimals === undefined) {
        cold.push(`decimals ${chainId}:${assetId}`);
        continue;
      }
      const priced = (["prepare", "fulfill"] as const).every(
        (method) => deps.fees.gasFeeInAsset({ chainId, assetId, decimals, method }) !== undefined,
      );
      if (!priced) {
        cold.push(`gas fee ${chainId}:${assetId}`);
      }
    }
    const [routerBalances, gasBalances] = await Promise.all([
      Promise.all(assets.map((a) => deps.balances.getRouterBalance(a.chainId, a.assetId))),
      Promise.all(chains.map((chainId) => deps.balances.getGasBalance(chainId))),
    ]);
    routerBalances.forEach((stored, i) => {
      if (!isFresh(stored)) {
        cold.push(`liquidity ${assets[i].chainId}:${assets[i].assetId}`);
      }
    });
    gasBalances.forEach((stored, i) => {
      if (!isFresh(stored)) {
        cold.push(`gas balance ${chains[i]}`);
      }
    });
    if (cold.length === 0) {
      return undefined;
    }
    const more = cold.length > MAX_LISTED ? ` and ${cold.length - MAX_LISTED} more` : "";
    return `cannot bid yet, cold: ${cold.slice(0, MAX_LISTED).join(", ")}${more}`;
  };
}

/** Every (chain, asset) of a swap pool whose chain this router is configured for. */
function poolAssets(config: RouterConfig): Array<{ chainId: number; assetId: string }> {
  const seen = new Map<string, { chainId: number; assetId: string }>();
  for (const pool of config.swapPools) {
    for (const asset of pool.assets) {
      if (config.chainConfig[String(asset.chainId)] !== undefined) {
        seen.set(`${asset.chainId}:${asset.assetId.toLowerCase()}`, {
          chainId: asset.chainId,
          assetId: asset.assetId,
        });
      }
    }
  }
  return [...seen.values()];
}

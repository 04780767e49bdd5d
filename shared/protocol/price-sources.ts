import { ZeroAddress, getAddress } from "ethers";
import type { RouterConfig } from "../config/types";

/** Where one price is read: ConnextPriceOracle.getTokenPrice(address) on `chainId`. */
export interface PriceSource {
  readonly chainId: number;
  /** Lowercase. */
  readonly address: string;
}

const MAINNET = 1;

/**
 * docs/protocol.md#price-sources, with our config as the source of mainnet equivalents: a pool asset with a
 * `mainnetEquivalent` is priced on chain 1 at that address, else on its own chain; a chain's native token
 * at its `nativeMainnetEquivalent` on chain 1, else at address(0) (the oracle's wrapped native) on its own
 * chain. Built once from the config; lookups are map reads.
 */
export interface PriceSources {
  asset(chainId: number, assetId: string): PriceSource;
  native(chainId: number): PriceSource;
  /** The oracle address configured for a chain (undefined: no oracle, the fee is 0). */
  oracle(chainId: number): string | undefined;
  /** Every price any fee can need, grouped by the chain whose oracle answers it. */
  targets(): ReadonlyMap<number, readonly string[]>;
  /** Chains whose gas price a fee can need: every pool chain, plus chain 1 when Optimism (10) is a pool chain. */
  gasPriceChains(): readonly number[];
  /** Pool assets per chain (checksummed, native excluded): the decimals to read. */
  poolAssets(): ReadonlyMap<number, readonly string[]>;
}

export function createPriceSources(config: RouterConfig): PriceSources {
  const equivalents = new Map<string, string>();
  const poolAssets = new Map<number, Set<string>>();
  for (const pool of config.swapPools) {
    for (const asset of pool.assets) {
      if (asset.mainnetEquivalent !== undefined) {
        equivalents.set(assetKey(asset.chainId, asset.assetId), asset.mainnetEquivalent.toLowerCase());
      }
      const set = poolAssets.get(asset.chainId) ?? new Set<string>();
      if (asset.assetId.toLowerCase() !== ZeroAddress) {
        set.add(getAddress(asset.assetId));
      }
      poolAssets.set(asset.chainId, set);
    }
  }
  const asset = (chainId: number, assetId: string): PriceSource => {
    const equivalent = equivalents.get(assetKey(chainId, assetId));
    return equivalent === undefined
      ? { chainId, address: assetId.toLowerCase() }
      : { chainId: MAINNET, address: equivalent };
  };
  const native = (chainId: number): PriceSource => {
    const equivalent = config.chainConfig[String(chainId)]?.nativeMainnetEquivalent;
    return equivalent === undefined
      ? { chainId, address: ZeroAddress }
      : { chainId: MAINNET, address: equivalent.toLowerCase() };
  };
  const oracle = (chainId: number): string | undefined => config.chainConfig[String(chainId)]?.priceOracleAddress;

  const targets = new Map<number, Set<string>>();
  const want = (source: PriceSource): void => {
    if (oracle(source.chainId) === undefined) {
      return;
    }
    const set = targets.get(source.chainId) ?? new Set<string>();
    set.add(source.address);
    targets.set(source.chainId, set);
  };
  const gasChains = new Set<number>();
  for (const [chainId, assets] of poolAssets) {
    gasChains.add(chainId);
    want(native(chainId));
    for (const assetId of assets) {
      want(asset(chainId, assetId));
    }
    // A native pool asset is priced like the native token.
    want(asset(chainId, ZeroAddress));
  }
  if (gasChains.has(10)) {
    gasChains.add(MAINNET);
  }
  return {
    asset,
    native,
    oracle,
    targets: () => new Map([...targets].map(([id, set]) => [id, [...set]])),
    gasPriceChains: () => [...gasChains].filter((id) => config.chainConfig[String(id)] !== undefined),
    poolAssets: () => new Map([...poolAssets].map(([id, set]) => [id, [...set]])),
  };
}

export function assetKey(chainId: number, assetId: string): string {
  return `${chainId}:${assetId.toLowerCase()}`;
}

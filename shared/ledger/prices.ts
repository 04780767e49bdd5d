import type { ChainProvider } from "../chain/chain-provider";
import { readOraclePrice } from "../chain/oracle-price";
import type { RouterConfig } from "../config/types";
import { errorMessage } from "../errors";
import type { Logger } from "../logging/create-logger";
import { createPriceSources, type PriceSource } from "../protocol/price-sources";

/** Where and when a booked figure happened: its chain, block and block time (unix seconds). */
export interface PricePoint {
  readonly chainId: number;
  readonly blockNumber: number;
  readonly time: number;
}

export interface LedgerPricer {
  /** USD × 1e18 per whole token of `assetId` on the event's chain at its time; undefined when no price is known. */
  asset(point: PricePoint, assetId: string): Promise<bigint | undefined>;
  /** The same for the chain's native token (gas). */
  native(point: PricePoint): Promise<bigint | undefined>;
}

const BLOCK_AT_CACHE_SIZE = 1_000;

/**
 * Prices as the auction reads them (docs/protocol.md#price-sources: a mainnet equivalent on chain 1's
 * ConnextPriceOracle, else the chain's own oracle), but at the event's time: on the event's own chain at its
 * block, on chain 1 at the last block not after the event's time (found by bisection, cached). An oracle that
 * knows no price (0), a chain without an oracle, or a failed (e.g. non-archive) read all give undefined: the
 * row stays unpriced (NULL) for the repricing pass, never 0.
 */
export function createLedgerPricer(params: {
  readonly config: RouterConfig;
  readonly providerFor: (chainId: number) => ChainProvider;
  readonly logger: Logger;
}): LedgerPricer {
  const sources = createPriceSources(params.config);
  const blockAtCache = new Map<string, Promise<number>>();

  /** The newest block of `chainId` whose timestamp is at or before `time`. */
  const blockAt = (chainId: number, time: number): Promise<number> => {
    const key = `${chainId}:${time}`;
    let found = blockAtCache.get(key);
    if (!found) {
      found = bisectBlock(params.providerFor(chainId), time);
      found.catch(() => blockAtCache.delete(key));
      if (blockAtCache.size >= BLOCK_AT_CACHE_SIZE) blockAtCache.delete(blockAtCache.keys().next().value as string);
      blockAtCache.set(key, found);
    }
    return found;
  };

  const read = async (point: PricePoint, source: PriceSource): Promise<bigint | undefined> => {
    const oracle = sources.oracle(source.chainId);
    if (oracle === undefined) return undefined;
    try {
      const block = source.chainId === point.chainId ? point.blockNumber : await blockAt(source.chainId, point.time);
      const provider = params.providerFor(source.chainId);
      const price = await provider.read(
        (p) => readOraclePrice({ call: (tx) => p.call({ ...tx, blockTag: block }) }, oracle, source.address),
        "oracle price",
      );
      return price > 0n ? price : undefined;
    } catch (err) {
      params.logger.debug("ledger: price not read; the row stays unpriced", {
        at: "ledger.price",
        chainId: source.chainId,
        address: source.address,
        error: errorMessage(err),
      });
      return undefined;
    }
  };

  return {
    asset: (point, assetId) => read(point, sources.asset(point.chainId, assetId)),
    native: (point) => read(point, sources.native(point.chainId)),
  };
}

async function bisectBlock(provider: ChainProvider, time: number): Promise<number> {
  const head = await provider.getBlock("latest");
  if (!head) throw new Error("no latest block");
  if (head.timestamp <= time) return head.number;
  let lo = 0;
  let hi = head.number;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const block = await provider.getBlock(mid);
    if (!block) throw new Error(`block ${mid} not found`);
    if (block.timestamp <= time) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

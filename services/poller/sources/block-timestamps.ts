import type { ChainProvider } from "../../../shared/chain/chain-provider";

/** Confirmed blocks' timestamps kept per logs source: a transfer's record carries its block's time. */
const TIMESTAMP_CACHE_SIZE = 2_048;

/**
 * Reads the timestamps of a range's transfer blocks into the cache this many at a time before the batch is built:
 * one block after another they were a round trip each. Bounded, so a range of many blocks is no burst a
 * rate-limited public RPC refuses (the decide step's DECISION_BATCH_SIZE, for the same reason).
 */
const TIMESTAMP_READS_AT_ONCE = 8;

export async function prefetchTimestamps(
  timestamps: (blockNumber: number) => Promise<number>,
  blockNumbers: readonly number[],
): Promise<void> {
  const distinct = [...new Set(blockNumbers)].slice(0, TIMESTAMP_CACHE_SIZE);
  for (let start = 0; start < distinct.length; start += TIMESTAMP_READS_AT_ONCE) {
    await Promise.all(distinct.slice(start, start + TIMESTAMP_READS_AT_ONCE).map(timestamps));
  }
}

/** Block timestamps by number; a block's timestamp never changes once it is confirmed. */
export function createTimestampCache(provider: ChainProvider): {
  read(blockNumber: number): Promise<number>;
  /** A confirmed block's timestamp read with the block by someone else (the range's last block). */
  remember(blockNumber: number, timestamp: number): void;
} {
  const cache = new Map<number, number>();
  const remember = (blockNumber: number, timestamp: number): void => {
    if (cache.size >= TIMESTAMP_CACHE_SIZE) {
      cache.delete(cache.keys().next().value as number);
    }
    cache.set(blockNumber, timestamp);
  };
  return {
    remember,
    read: async (blockNumber) => {
      const cached = cache.get(blockNumber);
      if (cached !== undefined) {
        return cached;
      }
      const block = await provider.getBlock(blockNumber);
      if (block === null) {
        throw new Error(`block ${blockNumber} not found`);
      }
      remember(blockNumber, block.timestamp);
      return block.timestamp;
    },
  };
}

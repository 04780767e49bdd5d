/**
 * Liquidity the sender's concurrent jobs have committed but the chain does not show yet, per asset, in this
 * process. With many jobs at once, two receiving prepares could both see enough unlocked liquidity, and the
 * second would revert on chain (#P:018) after its transfer decision was claimed. A prepare holds its amount
 * from its liquidity check until its transaction is mined (or its run ends); another prepare that fits the
 * chain's balance only without those holds waits (LIQUIDITY_IN_FLIGHT, parked briefly) instead of sending.
 */
export interface JobLiquidity {
  /** Total held by the other jobs of this process for `assetId` (lowercase-insensitive). */
  heldByOthers(assetId: string): bigint;
  hold(assetId: string, amount: bigint): void;
  /** Drops this job's holds (its transaction is mined, so the chain's balance shows it). */
  release(): void;
}

export interface LiquidityInFlight {
  forJob(jobId: string): JobLiquidity;
}

export function createLiquidityInFlight(): LiquidityInFlight {
  const holds = new Map<string, { assetId: string; amount: bigint }>();
  return {
    forJob: (jobId) => ({
      heldByOthers: (assetId) => {
        let total = 0n;
        for (const [holder, h] of holds) {
          if (holder !== jobId && h.assetId === assetId.toLowerCase()) {
            total += h.amount;
          }
        }
        return total;
      },
      hold: (assetId, amount) => {
        holds.set(jobId, { assetId: assetId.toLowerCase(), amount });
      },
      release: () => {
        holds.delete(jobId);
      },
    }),
  };
}

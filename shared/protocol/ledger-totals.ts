/** The books' totals and their comparison (the rebuild against the live books, docs/accounting.md#rebuild). */

/** One line of the books' totals: per (chain, asset, kind) how many rows and their sum (base units / wei). */
export interface LedgerTotal {
  readonly chainId: number;
  /** The event's asset; `gas` lines are the native asset. */
  readonly assetId: string;
  /** `<event>/<side>` for transfer events, the event for liquidity, `gas` for the signer's transactions. */
  readonly kind: string;
  readonly rows: number;
  readonly sum: string;
}

export interface TotalsComparison {
  readonly key: string;
  readonly live?: LedgerTotal;
  readonly rebuilt?: LedgerTotal;
  readonly same: boolean;
}

/** The two books side by side, line by line: same when both hold the line with the same count and sum. */
export function compareTotals(live: readonly LedgerTotal[], rebuilt: readonly LedgerTotal[]): TotalsComparison[] {
  const keyOf = (t: LedgerTotal) => `${t.chainId} ${t.assetId} ${t.kind}`;
  const liveBy = new Map(live.map((t) => [keyOf(t), t]));
  const rebuiltBy = new Map(rebuilt.map((t) => [keyOf(t), t]));
  return [...new Set([...liveBy.keys(), ...rebuiltBy.keys()])].sort().map((key) => {
    const l = liveBy.get(key);
    const r = rebuiltBy.get(key);
    return {
      key,
      live: l,
      rebuilt: r,
      same: l !== undefined && r !== undefined && l.rows === r.rows && l.sum === r.sum,
    };
  });
}

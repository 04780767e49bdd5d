/**
 * docs/protocol.md#relayer-fee: the relayer-fee threshold of a relayed fulfill. The requester offers `relayerFee`
 * (receiving-asset units, paid by the contract to whoever sends the fulfill); the router relays only if the offer is at
 * least its own estimate minus `relayerFeeThreshold` percent. Unlike the original, a threshold of 0 is honoured
 * (the offer must then cover the whole estimate) instead of being replaced by the default.
 */

/** Thresholds are percents with up to two decimals; the bound is computed in basis points to stay in bigint. */
const BASIS_POINTS = 10_000n;

export interface RelayerFeeCheckParams {
  /** What the requester offers, receiving-asset units. */
  readonly offeredFee: bigint;
  /** The router's estimate of the fulfill's gas cost in the same units. */
  readonly expectedFee: bigint;
  /** Percent of the estimate the offer may fall short by (0..100). */
  readonly thresholdPercent: number;
}

export interface RelayerFeeCheck {
  readonly ok: boolean;
  /** The smallest offer accepted: `expectedFee × (100 − threshold) / 100`, rounded down. */
  readonly lowerBound: bigint;
}

export function relayerFeeLowerBound(expectedFee: bigint, thresholdPercent: number): bigint {
  if (expectedFee < 0n) {
    throw new RangeError("expected relayer fee must not be negative");
  }
  return (expectedFee * keptBasisPoints(thresholdPercent)) / BASIS_POINTS;
}

/** The part of an estimate an offer must reach, in basis points: 10 000 − threshold. */
function keptBasisPoints(thresholdPercent: number): bigint {
  if (!Number.isFinite(thresholdPercent) || thresholdPercent < 0 || thresholdPercent > 100) {
    throw new RangeError(`relayerFeeThreshold must be within 0..100, got ${String(thresholdPercent)}`);
  }
  return BASIS_POINTS - BigInt(Math.round(thresholdPercent * 100));
}

export interface RelayerFeeBudgetParams {
  /** What the user signed, receiving-asset units. */
  readonly offeredFee: bigint;
  readonly thresholdPercent: number;
  /** USD × 1e18 per whole native token of the chain the relay is sent on (the auction's oracle price). */
  readonly nativePrice: bigint;
  /** USD × 1e18 per whole token of the fee's asset. */
  readonly tokenPrice: bigint;
  /** The fee asset's decimals. */
  readonly decimals: number;
}

/**
 * The most a relay may cost, in native wei, for the offer still to pass `checkRelayerFee` against that cost
 * priced like the auction's fee (gas-fee.ts, `gasFeeInToken` with no gas price factor): the check inverted, so
 * the submitter can cap what it spends instead of trusting the auction's 200 000-gas estimate. Exact: the
 * returned cost passes, one wei more does not. Undefined when a price is 0 (the cost cannot be priced) or the
 * threshold is 100 (any cost would pass).
 */
export function relayerFeeBudgetWei(params: RelayerFeeBudgetParams): bigint | undefined {
  const { offeredFee, nativePrice, tokenPrice, decimals } = params;
  const kept = keptBasisPoints(params.thresholdPercent);
  if (kept === 0n || nativePrice <= 0n || tokenPrice <= 0n || offeredFee < 0n) {
    return undefined;
  }
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 255) {
    throw new RangeError(`decimals must be an integer between 0 and 255, got ${decimals}`);
  }
  // The largest priced cost whose lower bound (cost × kept / 10 000, rounded down) the offer still reaches.
  const maxPriced = ((offeredFee + 1n) * BASIS_POINTS - 1n) / kept;
  // gasFeeInToken: priced = wei × nativePrice / tokenPrice / 10^(18 − decimals), each division rounding down.
  if (decimals <= 18) {
    return ((maxPriced + 1n) * tokenPrice * 10n ** BigInt(18 - decimals) - 1n) / nativePrice;
  }
  const wholeUnits = maxPriced / 10n ** BigInt(decimals - 18);
  return ((wholeUnits + 1n) * tokenPrice - 1n) / nativePrice;
}

export function checkRelayerFee(params: RelayerFeeCheckParams): RelayerFeeCheck {
  const lowerBound = relayerFeeLowerBound(params.expectedFee, params.thresholdPercent);
  return { ok: params.offeredFee >= lowerBound, lowerBound };
}

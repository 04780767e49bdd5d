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
  if (!Number.isFinite(thresholdPercent) || thresholdPercent < 0 || thresholdPercent > 100) {
    throw new RangeError(`relayerFeeThreshold must be within 0..100, got ${String(thresholdPercent)}`);
  }
  if (expectedFee < 0n) {
    throw new RangeError("expected relayer fee must not be negative");
  }
  const keptBasisPoints = BASIS_POINTS - BigInt(Math.round(thresholdPercent * 100));
  return (expectedFee * keptBasisPoints) / BASIS_POINTS;
}

export function checkRelayerFee(params: RelayerFeeCheckParams): RelayerFeeCheck {
  const lowerBound = relayerFeeLowerBound(params.expectedFee, params.thresholdPercent);
  return { ok: params.offeredFee >= lowerBound, lowerBound };
}

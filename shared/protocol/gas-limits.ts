import type { PricedMethod } from "./gas-fee";

/**
 * Gas a TransactionManager method uses, and the divisor that scales a chain's gas price (docs/protocol.md#gas-limits).
 */
export interface GasLimits {
  readonly prepare: bigint;
  readonly fulfill: bigint;
  readonly cancel: bigint;
  /** L1 data gas of the method on an optimistic rollup (only chain 10 uses it). */
  readonly prepareL1: bigint;
  readonly fulfillL1: bigint;
  readonly cancelL1: bigint;
  /** `impactedGasPrice = gasPrice * 1e18 / gasPriceFactor`. */
  readonly gasPriceFactor: bigint;
}

/** The original's built-in defaults (chain data key "0" plus its code defaults). */
export const DEFAULT_GAS_LIMITS: GasLimits = {
  prepare: 190_000n,
  fulfill: 200_000n,
  cancel: 204_271n,
  prepareL1: 20_623n,
  fulfillL1: 13_965n,
  cancelL1: 13_965n,
  gasPriceFactor: 10n ** 18n,
};

/** Per-chain overrides from the chain-data snapshot of 2022-06 (listed in docs/protocol.md#gas-limits). */
const CHAIN_GAS_LIMITS: Readonly<Record<number, Partial<GasLimits>>> = {
  10: { prepare: 200_000n, fulfill: 170_000n },
  56: { prepare: 180_000n, fulfill: 170_000n },
  100: { prepare: 180_000n, fulfill: 240_000n },
  122: { prepare: 160_000n, fulfill: 125_000n },
  137: { prepare: 200_000n, fulfill: 165_000n },
  250: { prepare: 200_000n, fulfill: 175_000n },
  1284: { prepare: 150_000n, fulfill: 150_000n },
  1285: { prepare: 160_000n, fulfill: 125_000n },
  43114: { prepare: 190_000n, fulfill: 160_000n },
  42161: { prepare: 2_500_000n, fulfill: 1_800_000n, cancel: 1_800_000n, gasPriceFactor: 1_250_000_000_000_000_000n },
};

/** The chain id whose fees carry an L1 data component priced with chain 1's gas price (Optimism). */
export const OPTIMISM_CHAIN_ID = 10;

export function gasLimitsFor(chainId: number): GasLimits {
  return { ...DEFAULT_GAS_LIMITS, ...CHAIN_GAS_LIMITS[chainId] };
}

export function gasLimitOf(limits: GasLimits, method: PricedMethod): bigint {
  return limits[method];
}

export function l1GasLimitOf(limits: GasLimits, method: PricedMethod): bigint {
  return method === "prepare" ? limits.prepareL1 : method === "fulfill" ? limits.fulfillL1 : limits.cancelL1;
}

/**
 * Transaction fees as values, and the pure arithmetic the submitter does on them (docs/protocol.md#gas-price).
 * No I/O here: `shared/chain/gas-price.ts` fetches prices, this file only compares, raises and caps them.
 * All amounts are wei (bigint); the JSON form keeps them as decimal strings for Redis records and logs.
 */
export type Fee = LegacyFee | Eip1559Fee;

export interface LegacyFee {
  readonly type: 0;
  readonly gasPrice: bigint;
}

export interface Eip1559Fee {
  readonly type: 2;
  readonly maxFeePerGas: bigint;
  readonly maxPriorityFeePerGas: bigint;
}

export type FeeJson =
  | { readonly type: 0; readonly gasPrice: string }
  | { readonly type: 2; readonly maxFeePerGas: string; readonly maxPriorityFeePerGas: string };

/** The most a transaction with this fee can pay per gas: what the ceiling and the balance check are about. */
export function feeCap(fee: Fee): bigint {
  return fee.type === 0 ? fee.gasPrice : fee.maxFeePerGas;
}

/** Never above `maximum`; for type 2 the tip also never exceeds the fee cap (nodes reject that). */
export function clampFee(fee: Fee, maximum: bigint): Fee {
  if (fee.type === 0) {
    return { type: 0, gasPrice: min(fee.gasPrice, maximum) };
  }
  const maxFeePerGas = min(fee.maxFeePerGas, maximum);
  return { type: 2, maxFeePerGas, maxPriorityFeePerGas: min(fee.maxPriorityFeePerGas, maxFeePerGas) };
}

/** At or above the ceiling, a bump cannot raise the price any more: only waiting is left (Hop #494: gte, not gt). */
export function isAtCeiling(fee: Fee, maximum: bigint): boolean {
  return feeCap(fee) >= maximum;
}

export function sameFee(a: Fee, b: Fee): boolean {
  if (a.type === 0 || b.type === 0) {
    return a.type === b.type && feeCap(a) === feeCap(b);
  }
  return a.maxFeePerGas === b.maxFeePerGas && a.maxPriorityFeePerGas === b.maxPriorityFeePerGas;
}

/**
 * The replacement fee for a stuck transaction: every component raised by `percent` (rounded up, so a
 * replacement is never underpriced by rounding), then lifted to at least `networkFee` when the network
 * has moved further than that, then capped at `maximum`. For type 2 both the fee cap and the tip rise:
 * nodes accept a replacement only when both do. The cap can make the result less than `percent` above
 * the old fee, or equal to it; callers check `sameFee` and `isAtCeiling` before sending it.
 */
export function bumpFee(fee: Fee, percent: number, maximum: bigint, networkFee?: Fee): Fee {
  if (!Number.isInteger(percent) || percent < 0) {
    throw new RangeError(`bump percent must be a non-negative integer, got ${percent}`);
  }
  const raise = (value: bigint): bigint => ceilDiv(value * BigInt(100 + percent), 100n);
  const floor = networkFee ? asType(networkFee, fee.type) : undefined;
  if (fee.type === 0) {
    const gasPrice = max(raise(fee.gasPrice), floor?.type === 0 ? floor.gasPrice : 0n);
    return clampFee({ type: 0, gasPrice }, maximum);
  }
  const floor2 = floor?.type === 2 ? floor : undefined;
  return clampFee(
    {
      type: 2,
      maxFeePerGas: max(raise(fee.maxFeePerGas), floor2?.maxFeePerGas ?? 0n),
      maxPriorityFeePerGas: max(raise(fee.maxPriorityFeePerGas), floor2?.maxPriorityFeePerGas ?? 0n),
    },
    maximum,
  );
}

/**
 * A fee expressed in another transaction type, for comparisons only: a legacy price is both cap and tip of
 * a type-2 fee; a type-2 fee's cap is the legacy price that pays at least as much.
 */
export function asType(fee: Fee, type: Fee["type"]): Fee {
  if (fee.type === type) {
    return fee;
  }
  return fee.type === 0
    ? { type: 2, maxFeePerGas: fee.gasPrice, maxPriorityFeePerGas: fee.gasPrice }
    : { type: 0, gasPrice: fee.maxFeePerGas };
}

export function feeToJson(fee: Fee): FeeJson {
  return fee.type === 0
    ? { type: 0, gasPrice: fee.gasPrice.toString() }
    : { type: 2, maxFeePerGas: fee.maxFeePerGas.toString(), maxPriorityFeePerGas: fee.maxPriorityFeePerGas.toString() };
}

export function feeFromJson(json: FeeJson): Fee {
  return json.type === 0
    ? { type: 0, gasPrice: BigInt(json.gasPrice) }
    : { type: 2, maxFeePerGas: BigInt(json.maxFeePerGas), maxPriorityFeePerGas: BigInt(json.maxPriorityFeePerGas) };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

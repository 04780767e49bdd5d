import { ProtocolInputError } from "./errors";
import { AuctionBid } from "./types";
import { parseUint } from "./values";

/** The original's fixed router fee of 0.05 % (docs/protocol.md#router-fee), as an exact ratio. */
export const ROUTER_FEE_NUMERATOR = 9995n;
export const ROUTER_FEE_DENOMINATOR = 10000n;

/** The original's `allowedTolerance` default (docs/protocol.md#receiving-prepare, step 6), in percent. */
export const DEFAULT_TOLERANCE_PERCENT = 10;

export interface AmountAfterRouterFeeParams {
  /** Sending-asset units. */
  amount: bigint;
  inputDecimals: number;
  outputDecimals: number;
}

/**
 * docs/protocol.md#router-fee: convert decimals (truncating), then keep 9995/10000 of it (truncating). The swap rate is
 * the constant 1 of the original. The auction subtracts the gas fee (docs/protocol.md#gas-fee) from this to get
 * `amountReceived`.
 */
export function amountAfterRouterFee(params: AmountAfterRouterFeeParams): bigint {
  const { amount, inputDecimals, outputDecimals } = params;
  if (amount < 0n) {
    throw new ProtocolInputError("amount must not be negative", { amount: amount.toString() });
  }
  assertDecimals(inputDecimals, "inputDecimals");
  assertDecimals(outputDecimals, "outputDecimals");
  const converted = (amount * 10n ** BigInt(outputDecimals)) / 10n ** BigInt(inputDecimals);
  return (converted * ROUTER_FEE_NUMERATOR) / ROUTER_FEE_DENOMINATOR;
}

export interface ToleranceParams {
  expected: bigint;
  actual: bigint;
  /** Percent; floored like the original's `allowedTolerance`. 0..100. */
  tolerancePercent: number;
}

/**
 * docs/protocol.md#receiving-prepare step 6: `floor(expected*(100-t)/100) <= actual <= floor(expected*(100+t)/100)`,
 * with `t` the floored tolerance. Both bounds inclusive, as in the original.
 */
export function isWithinTolerance(params: ToleranceParams): boolean {
  const t = BigInt(toleranceOf(params.tolerancePercent));
  const { expected, actual } = params;
  const lower = (expected * (100n - t)) / 100n;
  const upper = (expected * (100n + t)) / 100n;
  return actual >= lower && actual <= upper;
}

export interface ReceiverAmountParams {
  bid: AuctionBid;
  /** The amount the sending TransactionManager actually locked (`txData.amount` of the sender record). */
  lockedAmount: bigint;
  tolerancePercent: number;
}

/**
 * The amount the router prepares on the receiving chain, or null when the locked amount is outside the
 * tolerance around `bid.amount`.
 *
 * Weak point 4 of the original: it recomputed the receiving amount at prepare time from the locked amount
 * and the *current* gas price, so a user could get less than the `amountReceived` the router had signed.
 * We honour the signed quote instead; the gas fee was already taken out of `amountReceived` at auction time,
 * and it is never recomputed here:
 * - locked amount >= `bid.amount` (equal, or more within tolerance): exactly `bid.amountReceived`. Any
 *   surplus stays with the router's sending-side claim; we never pay above what we signed.
 * - locked amount < `bid.amount` but within tolerance (a fee-on-transfer token): `amountReceived` scaled down
 *   by `locked / bid.amount`, floored, so the router never pays for tokens it did not receive.
 */
export function receiverAmountFor(params: ReceiverAmountParams): bigint | null {
  const bidAmount = parseUint(params.bid.amount, "bid.amount");
  const amountReceived = parseUint(params.bid.amountReceived, "bid.amountReceived");
  const { lockedAmount, tolerancePercent } = params;
  if (!isWithinTolerance({ expected: bidAmount, actual: lockedAmount, tolerancePercent })) {
    return null;
  }
  if (lockedAmount >= bidAmount) {
    return amountReceived;
  }
  return (amountReceived * lockedAmount) / bidAmount;
}

function toleranceOf(tolerancePercent: number): number {
  const t = Math.floor(tolerancePercent);
  if (!Number.isFinite(t) || t < 0 || t > 100) {
    throw new ProtocolInputError("tolerancePercent must be between 0 and 100", { tolerancePercent });
  }
  return t;
}

function assertDecimals(decimals: number, field: string): void {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 255) {
    throw new ProtocolInputError(`${field} must be an integer between 0 and 255`, { field, decimals });
  }
}

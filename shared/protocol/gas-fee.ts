import { ProtocolInputError } from "./errors";

/** A gas-consuming TransactionManager method the router prices (docs/protocol.md#gas-fee). */
export type PricedMethod = "prepare" | "fulfill" | "cancel";

const WAD = 10n ** 18n;

export interface GasFeeInputs {
  /** Wei per gas on the chain the method runs on (the fee cap of the current price). */
  readonly gasPrice: bigint;
  readonly gasLimit: bigint;
  /** `impactedGasPrice = gasPrice * 1e18 / gasPriceFactor` (1e18 = no scaling). */
  readonly gasPriceFactor: bigint;
  /** USD × 1e18 per whole native token of that chain. */
  readonly nativePrice: bigint;
  /** USD × 1e18 per whole token of the asset the fee is expressed in; 0 = unknown (fee 0). */
  readonly tokenPrice: bigint;
  /** Decimals of the result. */
  readonly decimals: number;
  /** Optimism's L1 data component: chain 1's gas price and the method's L1 gas. */
  readonly l1?: { readonly gasPrice: bigint; readonly gasLimit: bigint };
}

/**
 * docs/protocol.md#gas-fee, integers only:
 *   usd36 = gasPrice * 1e18 / gasPriceFactor * gasLimit * nativePrice + l1GasPrice * l1GasLimit * nativePrice
 *   fee   = usd36 / tokenPrice / 10^(18 - decimals)        (0 when tokenPrice is 0)
 * For an asset with more than 18 decimals the last step multiplies by 10^(decimals - 18) instead.
 */
export function gasFeeInToken(inputs: GasFeeInputs): bigint {
  const { gasPrice, gasLimit, gasPriceFactor, nativePrice, tokenPrice, decimals } = inputs;
  for (const [field, value] of Object.entries({ gasPrice, gasLimit, nativePrice, tokenPrice })) {
    if (value < 0n) {
      throw new ProtocolInputError(`${field} must not be negative`, { field });
    }
  }
  if (gasPriceFactor <= 0n) {
    throw new ProtocolInputError("gasPriceFactor must be positive", {});
  }
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 255) {
    throw new ProtocolInputError("decimals must be an integer between 0 and 255", { decimals });
  }
  if (tokenPrice === 0n) {
    return 0n;
  }
  const impactedGasPrice = (gasPrice * WAD) / gasPriceFactor;
  const l1 = inputs.l1 ? inputs.l1.gasPrice * inputs.l1.gasLimit * nativePrice : 0n;
  const usd36 = impactedGasPrice * gasLimit * nativePrice + l1;
  const inToken = usd36 / tokenPrice;
  return decimals <= 18 ? inToken / 10n ** BigInt(18 - decimals) : inToken * 10n ** BigInt(decimals - 18);
}

import { ProtocolInputError } from "../../shared/protocol/errors";
import { gasFeeInToken } from "../../shared/protocol/gas-fee";
import { DEFAULT_GAS_LIMITS, gasLimitsFor, l1GasLimitOf } from "../../shared/protocol/gas-limits";

const E18 = 10n ** 18n;
const GWEI = 10n ** 9n;

describe("gasFeeInToken (docs/protocol.md#gas-fee)", () => {
  it("prices 200 000 gas at 50 gwei with ETH at 2000 USD in a 6-decimal 1-USD token", () => {
    // 0.01 ETH = 20 USD = 20 000 000 units of a 6-decimal token.
    const fee = gasFeeInToken({
      gasPrice: 50n * GWEI,
      gasLimit: 200_000n,
      gasPriceFactor: E18,
      nativePrice: 2000n * E18,
      tokenPrice: E18,
      decimals: 6,
    });
    expect(fee).toBe(20_000_000n);
  });

  it("expresses the same fee in an 18-decimal token worth 2 USD", () => {
    const fee = gasFeeInToken({
      gasPrice: 50n * GWEI,
      gasLimit: 200_000n,
      gasPriceFactor: E18,
      nativePrice: 2000n * E18,
      tokenPrice: 2n * E18,
      decimals: 18,
    });
    expect(fee).toBe(10n * E18);
  });

  it("truncates at each division like the original", () => {
    // usd36 = 7 * 1 * 3e18 = 21e18; / tokenPrice 4e18 = 5 (floor 5.25); / 10^(18-18) = 5.
    expect(
      gasFeeInToken({
        gasPrice: 7n,
        gasLimit: 1n,
        gasPriceFactor: E18,
        nativePrice: 3n * E18,
        tokenPrice: 4n * E18,
        decimals: 18,
      }),
    ).toBe(5n);
  });

  it("scales the gas price by gasPriceFactor (Arbitrum's 1.25e18)", () => {
    const limits = gasLimitsFor(42161);
    const fee = gasFeeInToken({
      gasPrice: 125n,
      gasLimit: 1n,
      gasPriceFactor: limits.gasPriceFactor,
      nativePrice: E18,
      tokenPrice: E18,
      decimals: 18,
    });
    expect(fee).toBe(100n);
  });

  it("adds Optimism's L1 term: chain 1 gas price × L1 gas × native price", () => {
    const base = {
      gasPrice: GWEI / 1000n,
      gasLimit: 200_000n,
      gasPriceFactor: E18,
      nativePrice: 2000n * E18,
      tokenPrice: E18,
      decimals: 6,
    };
    const l2Only = gasFeeInToken(base);
    const withL1 = gasFeeInToken({ ...base, l1: { gasPrice: 30n * GWEI, gasLimit: 20_623n } });
    // 30 gwei × 20 623 gas = 0.00061869 ETH = 1.23738 USD = 1 237 380 units.
    expect(withL1 - l2Only).toBe(1_237_380n);
  });

  it("is 0 when the token price is 0 (no price on the oracle)", () => {
    expect(
      gasFeeInToken({
        gasPrice: GWEI,
        gasLimit: 1n,
        gasPriceFactor: E18,
        nativePrice: E18,
        tokenPrice: 0n,
        decimals: 6,
      }),
    ).toBe(0n);
  });

  it("multiplies for tokens with more than 18 decimals", () => {
    expect(
      gasFeeInToken({
        gasPrice: 1n,
        gasLimit: 1n,
        gasPriceFactor: E18,
        nativePrice: E18,
        tokenPrice: E18,
        decimals: 20,
      }),
    ).toBe(100n);
  });

  it("refuses negative inputs and a zero factor", () => {
    const ok = { gasPrice: 1n, gasLimit: 1n, gasPriceFactor: E18, nativePrice: E18, tokenPrice: E18, decimals: 6 };
    expect(() => gasFeeInToken({ ...ok, gasPrice: -1n })).toThrow(ProtocolInputError);
    expect(() => gasFeeInToken({ ...ok, gasPriceFactor: 0n })).toThrow(ProtocolInputError);
    expect(() => gasFeeInToken({ ...ok, decimals: 1.5 })).toThrow(ProtocolInputError);
  });
});

describe("gas limits (docs/protocol.md#gas-limits)", () => {
  it("uses the defaults for an unlisted chain", () => {
    expect(gasLimitsFor(1337)).toEqual(DEFAULT_GAS_LIMITS);
    expect(DEFAULT_GAS_LIMITS.prepare).toBe(190_000n);
    expect(DEFAULT_GAS_LIMITS.fulfill).toBe(200_000n);
  });

  it.each([
    [10, 200_000n, 170_000n],
    [56, 180_000n, 170_000n],
    [100, 180_000n, 240_000n],
    [137, 200_000n, 165_000n],
    [42161, 2_500_000n, 1_800_000n],
    [43114, 190_000n, 160_000n],
  ])("chain %d prepares with %d and fulfills with %d gas", (chainId, prepare, fulfill) => {
    expect(gasLimitsFor(chainId).prepare).toBe(prepare);
    expect(gasLimitsFor(chainId).fulfill).toBe(fulfill);
  });

  it("has the L1 gas of each method", () => {
    expect(l1GasLimitOf(gasLimitsFor(10), "prepare")).toBe(20_623n);
    expect(l1GasLimitOf(gasLimitsFor(10), "fulfill")).toBe(13_965n);
  });
});

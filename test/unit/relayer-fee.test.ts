import { ZeroAddress } from "ethers";
import type { AuctionContext, FeeEstimator, GasFeeParams } from "../../services/auction/context";
import {
  CallDataGasRequiredError,
  NotEnoughRelayerFeeError,
  RelayUnpricedError,
  RelayerFeeUnavailableError,
} from "../../services/auction/operations/relay-errors";
import { decideRelayFee } from "../../services/auction/operations/relay-fee";
import type { ChainConfig } from "../../shared/config/types";
import type { FulfillMetaTx } from "../../shared/protocol/metatx-request";
import { gasFeeInToken } from "../../shared/protocol/gas-fee";
import { checkRelayerFee, relayerFeeBudgetWei, relayerFeeLowerBound } from "../../shared/protocol/relayer-fee";
import type { TransactionData } from "../../shared/protocol/types";

describe("relayer fee threshold (docs/protocol.md#relayer-fee)", () => {
  it("accepts an offer down to the estimate minus the threshold percent, and refuses one unit below", () => {
    expect(relayerFeeLowerBound(1000n, 10)).toBe(900n);
    expect(checkRelayerFee({ offeredFee: 900n, expectedFee: 1000n, thresholdPercent: 10 })).toEqual({
      ok: true,
      lowerBound: 900n,
    });
    expect(checkRelayerFee({ offeredFee: 899n, expectedFee: 1000n, thresholdPercent: 10 })).toEqual({
      ok: false,
      lowerBound: 900n,
    });
  });

  it("honours a threshold of 0: the offer must cover the whole estimate (the original replaced 0 by 10)", () => {
    expect(checkRelayerFee({ offeredFee: 999n, expectedFee: 1000n, thresholdPercent: 0 })).toMatchObject({ ok: false });
    expect(checkRelayerFee({ offeredFee: 1000n, expectedFee: 1000n, thresholdPercent: 0 })).toMatchObject({ ok: true });
  });

  it("accepts anything with a threshold of 100, and any offer when the estimate is 0 (no oracle)", () => {
    expect(checkRelayerFee({ offeredFee: 0n, expectedFee: 10n ** 30n, thresholdPercent: 100 })).toEqual({
      ok: true,
      lowerBound: 0n,
    });
    expect(checkRelayerFee({ offeredFee: 0n, expectedFee: 0n, thresholdPercent: 10 })).toMatchObject({ ok: true });
  });

  it("rounds the bound down and keeps fractional thresholds exact in bigint", () => {
    expect(relayerFeeLowerBound(999n, 10)).toBe(899n); // 899.1
    expect(relayerFeeLowerBound(10_000n, 12.5)).toBe(8750n);
    expect(relayerFeeLowerBound(10n ** 36n, 10)).toBe(9n * 10n ** 35n);
  });

  it("refuses a threshold outside 0..100 and a negative estimate", () => {
    expect(() => relayerFeeLowerBound(1n, -1)).toThrow(RangeError);
    expect(() => relayerFeeLowerBound(1n, 101)).toThrow(RangeError);
    expect(() => relayerFeeLowerBound(1n, Number.NaN)).toThrow(RangeError);
    expect(() => relayerFeeLowerBound(-1n, 10)).toThrow(RangeError);
  });
});

describe("decideRelayFee: the relay's fee from the auction's caches", () => {
  const TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
  const CALL_TO = "0x00000000000000000000000000000000000000c0";
  const chain = { relayerFeeThreshold: 10 } as ChainConfig;

  const request = (over: Partial<FulfillMetaTx> = {}, callTo = ZeroAddress): FulfillMetaTx => ({
    type: "Fulfill",
    to: CALL_TO,
    chainId: 1338,
    relayerFee: "1000",
    signature: "0x",
    callData: "0x",
    txData: { receivingAssetId: TOKEN, callTo, transactionId: "0x" + "11".repeat(32) } as TransactionData,
    ...over,
  });

  /** A fee estimator answering `fee` (undefined: cold) and recording the params it was asked with. */
  const ctxWith = (
    fee: bigint | undefined,
    decimals: number | "cold" = 18,
    unpriced = false,
  ): { ctx: AuctionContext; asked: GasFeeParams[] } => {
    const asked: GasFeeParams[] = [];
    const fees: FeeEstimator = {
      gasFeeInAsset: (p) => (asked.push(p), fee),
      unpriced: () => unpriced,
      decimals: () => (decimals === "cold" ? undefined : decimals),
      usdValue: () => undefined,
    };
    return { ctx: { fees } as unknown as AuctionContext, asked };
  };

  it("prices the fulfill in the receiving asset on the receiving chain, with no extra gas when nothing is called", () => {
    const { ctx, asked } = ctxWith(1000n);
    expect(decideRelayFee(ctx, chain, request())).toEqual({ expectedFee: 1000n, lowerBound: 900n });
    expect(asked).toEqual([{ chainId: 1338, assetId: TOKEN, decimals: 18, method: "fulfill", extraGas: 0n }]);
  });

  it("adds the requester's callDataGas, and counts a call with empty call data as 0", () => {
    const declared = ctxWith(1000n);
    decideRelayFee(declared.ctx, chain, request({ callData: "0xabcd", callDataGas: "50000" }, CALL_TO));
    expect(declared.asked[0].extraGas).toBe(50_000n);
    const empty = ctxWith(1000n);
    decideRelayFee(empty.ctx, chain, request({}, CALL_TO));
    expect(empty.asked[0].extraGas).toBe(0n);
  });

  it("refuses a call with call data and no callDataGas: estimating it would need an RPC", () => {
    const { ctx, asked } = ctxWith(1000n);
    expect(() => decideRelayFee(ctx, chain, request({ callData: "0xabcd" }, CALL_TO))).toThrow(
      CallDataGasRequiredError,
    );
    expect(asked).toEqual([]);
  });

  it("refuses with a reason while the fee cache is cold (no decimals, or no price)", () => {
    expect(() => decideRelayFee(ctxWith(1000n, "cold").ctx, chain, request())).toThrow(RelayerFeeUnavailableError);
    expect(() => decideRelayFee(ctxWith(undefined).ctx, chain, request())).toThrow(RelayerFeeUnavailableError);
  });

  it("refuses an unpriced fee (it is 0 and passes any offer) unless the chain allows unpriced relays", () => {
    const unpriced = ctxWith(0n, 18, true);
    expect(() => decideRelayFee(unpriced.ctx, chain, request({ relayerFee: "0" }))).toThrow(RelayUnpricedError);
    expect(unpriced.asked).toEqual([]);
    const allowed = { relayerFeeThreshold: 10, allowUnpricedRelay: true } as ChainConfig;
    expect(decideRelayFee(ctxWith(0n, 18, true).ctx, allowed, request({ relayerFee: "0" }))).toEqual({
      expectedFee: 0n,
      lowerBound: 0n,
    });
    const anyFee = { relayerFeeThreshold: 100 } as ChainConfig;
    expect(decideRelayFee(ctxWith(0n, 18, true).ctx, anyFee, request({ relayerFee: "0" })).lowerBound).toBe(0n);
  });

  it("refuses an offer below the chain's threshold, naming the numbers", () => {
    const strict = { relayerFeeThreshold: 0 } as ChainConfig;
    let refusal: unknown;
    try {
      decideRelayFee(ctxWith(1001n).ctx, strict, request());
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(NotEnoughRelayerFeeError);
    expect((refusal as NotEnoughRelayerFeeError).context).toMatchObject({
      relayerFee: "1000",
      expectedFee: "1001",
      lowerBound: "1001",
      relayerFeeThreshold: 0,
    });
  });
});

describe("relayer fee budget (the most a relay may cost for the offer to pass, in native wei)", () => {
  /** The auction's rule on a cost of `wei`: priced by gasFeeInToken (no factor), checked against the threshold. */
  const passes = (p: Parameters<typeof relayerFeeBudgetWei>[0], wei: bigint): boolean =>
    checkRelayerFee({
      offeredFee: p.offeredFee,
      thresholdPercent: p.thresholdPercent,
      expectedFee: gasFeeInToken({
        gasPrice: wei,
        gasLimit: 1n,
        gasPriceFactor: 10n ** 18n,
        nativePrice: p.nativePrice,
        tokenPrice: p.tokenPrice,
        decimals: p.decimals,
      }),
    }).ok;

  it("is exact: the budget passes the auction's rule and one wei more does not, over prices, decimals and thresholds", () => {
    let seed = 12_345n;
    const next = (bound: bigint): bigint => {
      seed = (seed * 6_364_136_223_846_793_005n + 1_442_695_040_888_963_407n) % 2n ** 64n;
      return seed % bound;
    };
    for (let i = 0; i < 2_000; i += 1) {
      const params = {
        offeredFee: next(10n ** BigInt(Number(next(25n)) + 1)),
        thresholdPercent: [0, 10, 12.5, 50, 99.99][Number(next(5n))],
        nativePrice: next(10n ** 22n) + 1n,
        tokenPrice: next(10n ** 22n) + 1n,
        decimals: [0, 6, 8, 18, 24][Number(next(5n))],
      };
      const budget = relayerFeeBudgetWei(params);
      expect(budget).toBeDefined();
      expect(passes(params, budget!)).toBe(true);
      expect(passes(params, budget! + 1n)).toBe(false);
    }
  });

  it("with one price for native and token (18 decimals) and threshold 0, the budget is the offer itself", () => {
    const price = 10n ** 18n;
    expect(
      relayerFeeBudgetWei({
        offeredFee: 5_000n,
        thresholdPercent: 0,
        nativePrice: price,
        tokenPrice: price,
        decimals: 18,
      }),
    ).toBe(5_000n);
    // A 10 % threshold lets the cost exceed the offer by up to 1/0.9: 10 001 × 0.9 = 9 000.9, rounded down to 9 000.
    expect(
      relayerFeeBudgetWei({
        offeredFee: 9_000n,
        thresholdPercent: 10,
        nativePrice: price,
        tokenPrice: price,
        decimals: 18,
      }),
    ).toBe(10_001n);
  });

  it("is undefined when the cost cannot be priced (a price of 0) or any cost passes (threshold 100)", () => {
    const base = { offeredFee: 1n, thresholdPercent: 10, nativePrice: 1n, tokenPrice: 1n, decimals: 18 };
    expect(relayerFeeBudgetWei({ ...base, nativePrice: 0n })).toBeUndefined();
    expect(relayerFeeBudgetWei({ ...base, tokenPrice: 0n })).toBeUndefined();
    expect(relayerFeeBudgetWei({ ...base, thresholdPercent: 100 })).toBeUndefined();
  });
});

import {
  asType,
  bumpFee,
  clampFee,
  feeFromJson,
  feeToJson,
  isAtCeiling,
  sameFee,
  type Fee,
} from "../../shared/protocol/gas";
import { FeeData } from "ethers";
import { getGasPrice, parseStationAnswer } from "../../shared/chain/gas-price";
import { GasPriceUnavailableError } from "../../shared/chain/errors";
import type { ChainConfig } from "../../shared/config/types";
import { createLogger } from "../../shared/logging/create-logger";

const GWEI = 1_000_000_000n;
const legacy = (gwei: bigint): Fee => ({ type: 0, gasPrice: gwei * GWEI });
const eip1559 = (maxGwei: bigint, tipGwei: bigint): Fee => ({
  type: 2,
  maxFeePerGas: maxGwei * GWEI,
  maxPriorityFeePerGas: tipGwei * GWEI,
});

describe("bumpFee", () => {
  it("raises a legacy price by the percent", () => {
    expect(bumpFee(legacy(100n), 20, 1000n * GWEI)).toEqual(legacy(120n));
  });

  it("rounds up, so a replacement is never underpriced by rounding", () => {
    expect(bumpFee({ type: 0, gasPrice: 7n }, 10, 1000n)).toEqual({ type: 0, gasPrice: 8n });
    expect(bumpFee({ type: 0, gasPrice: 1n }, 10, 1000n)).toEqual({ type: 0, gasPrice: 2n });
  });

  it("raises both the fee cap and the tip of a type-2 fee", () => {
    expect(bumpFee(eip1559(50n, 2n), 20, 1000n * GWEI)).toEqual({
      type: 2,
      maxFeePerGas: 60n * GWEI,
      maxPriorityFeePerGas: 2_400_000_000n,
    });
  });

  it("takes the network fee when the network moved further than the percent", () => {
    expect(bumpFee(legacy(100n), 20, 1000n * GWEI, legacy(300n))).toEqual(legacy(300n));
    expect(bumpFee(eip1559(50n, 2n), 20, 1000n * GWEI, eip1559(200n, 5n))).toEqual(eip1559(200n, 5n));
    // a lower network fee does not lower the bump
    expect(bumpFee(legacy(100n), 20, 1000n * GWEI, legacy(10n))).toEqual(legacy(120n));
  });

  it("compares a network fee of the other type through its cap", () => {
    expect(bumpFee(legacy(100n), 20, 1000n * GWEI, eip1559(500n, 3n))).toEqual(legacy(500n));
    expect(bumpFee(eip1559(50n, 2n), 20, 1000n * GWEI, legacy(90n))).toEqual(eip1559(90n, 90n));
  });

  it("caps at the ceiling, the type-2 tip included", () => {
    expect(bumpFee(legacy(1400n), 20, 1500n * GWEI)).toEqual(legacy(1500n));
    expect(bumpFee(eip1559(1400n, 1400n), 20, 1500n * GWEI)).toEqual(eip1559(1500n, 1500n));
  });

  it("returns the same fee at the ceiling, which callers detect to stop bumping", () => {
    const atCeiling = legacy(1500n);
    expect(isAtCeiling(atCeiling, 1500n * GWEI)).toBe(true);
    expect(sameFee(bumpFee(atCeiling, 20, 1500n * GWEI), atCeiling)).toBe(true);
    expect(isAtCeiling(legacy(1499n), 1500n * GWEI)).toBe(false);
    expect(isAtCeiling(eip1559(1500n, 1n), 1500n * GWEI)).toBe(true);
  });

  it("refuses a negative or fractional percent", () => {
    expect(() => bumpFee(legacy(1n), -1, 10n)).toThrow(RangeError);
    expect(() => bumpFee(legacy(1n), 1.5, 10n)).toThrow(RangeError);
  });
});

describe("fee helpers", () => {
  it("clamps the tip to the fee cap", () => {
    expect(clampFee(eip1559(10n, 50n), 1000n * GWEI)).toEqual(eip1559(10n, 10n));
    expect(clampFee(eip1559(2000n, 50n), 1000n * GWEI)).toEqual(eip1559(1000n, 50n));
  });

  it("converts between types for comparisons", () => {
    expect(asType(legacy(5n), 2)).toEqual(eip1559(5n, 5n));
    expect(asType(eip1559(9n, 1n), 0)).toEqual(legacy(9n));
  });

  it("round-trips through JSON as decimal strings", () => {
    for (const fee of [legacy(3n), eip1559(40n, 2n)]) {
      const json = feeToJson(fee);
      expect(JSON.parse(JSON.stringify(json))).toEqual(json);
      expect(feeFromJson(json)).toEqual(fee);
    }
    expect(feeToJson(legacy(3n))).toEqual({ type: 0, gasPrice: "3000000000" });
  });

  it("sameFee distinguishes types and tips", () => {
    expect(sameFee(legacy(1n), eip1559(1n, 1n))).toBe(false);
    expect(sameFee(eip1559(2n, 1n), eip1559(2n, 2n))).toBe(false);
    expect(sameFee(eip1559(2n, 1n), eip1559(2n, 1n))).toBe(true);
  });
});

describe("parseStationAnswer", () => {
  it("reads the original's {fast: gwei} as a legacy price", () => {
    expect(parseStationAnswer({ fast: 31.5 })).toEqual({ type: 0, gasPrice: 31_500_000_000n });
  });

  it("reads Polygon's {fast: {maxFee, maxPriorityFee}} as a type-2 fee", () => {
    expect(parseStationAnswer({ fast: { maxFee: 40.25, maxPriorityFee: 30 } })).toEqual({
      type: 2,
      maxFeePerGas: 40_250_000_000n,
      maxPriorityFeePerGas: 30_000_000_000n,
    });
  });

  it("ignores answers without a sane positive price", () => {
    expect(parseStationAnswer({ fast: 0 })).toBeUndefined();
    expect(parseStationAnswer({ fast: "30" })).toBeUndefined();
    expect(parseStationAnswer({ fast: 1e12 })).toBeUndefined();
    expect(parseStationAnswer({ standard: 3 })).toBeUndefined();
    expect(parseStationAnswer(null)).toBeUndefined();
  });
});

describe("getGasPrice", () => {
  const logger = createLogger({ level: "silent", service: "test" });
  const chain = (over: Partial<ChainConfig> = {}): ChainConfig =>
    ({ chainId: 137, gasStations: [], gasPriceMaximum: String(500n * GWEI), ...over }) as ChainConfig;
  const provider = (data: FeeData | Error) => ({
    getFeeData: async (): Promise<FeeData> => {
      if (data instanceof Error) throw data;
      return data;
    },
  });
  const answer = (body: unknown, status = 200): typeof fetch =>
    (async () => new Response(JSON.stringify(body), { status })) as typeof fetch;

  it("prefers the first station that answers, clamped to gasPriceMaximum", async () => {
    const stations = chain({
      gasStations: ["https://down.example/v2/SECRETKEY0123456789abcdef", "https://up.example"],
    });
    let calls = 0;
    const fetchFn = (async (url: string | URL | Request) => {
      calls += 1;
      return String(url).includes("down")
        ? new Response("", { status: 503 })
        : new Response(JSON.stringify({ fast: 900 }));
    }) as typeof fetch;
    await expect(
      getGasPrice(stations, { provider: provider(new Error("unused")), logger, fetch: fetchFn }),
    ).resolves.toEqual(legacy(500n));
    expect(calls).toBe(2);
  });

  it("takes EIP-1559 fields from the provider when the chain has a base fee, else its legacy price", async () => {
    const c = chain();
    const eip = new FeeData(30n * GWEI, 62n * GWEI, 2n * GWEI);
    await expect(getGasPrice(c, { provider: provider(eip), logger })).resolves.toEqual(eip1559(62n, 2n));
    const leg = new FeeData(7n * GWEI, null, null);
    await expect(getGasPrice(c, { provider: provider(leg), logger })).resolves.toEqual(legacy(7n));
    await expect(getGasPrice(c, { provider: provider(new FeeData(900n * GWEI, null, null)), logger })).resolves.toEqual(
      legacy(500n),
    );
  });

  it("falls back to defaultInitialGasPrice, and fails typed when there is nothing", async () => {
    const c = chain({ defaultInitialGasPrice: String(3n * GWEI), gasStations: ["https://bad.example"] });
    const down = provider(new Error("provider down"));
    await expect(getGasPrice(c, { provider: down, logger, fetch: answer({ nope: 1 }) })).resolves.toEqual(legacy(3n));
    await expect(getGasPrice(chain(), { provider: down, logger })).rejects.toBeInstanceOf(GasPriceUnavailableError);
  });
});

import { ZeroAddress, parseEther } from "ethers";
import { createFeeCache, createFeeEstimator, type FeeCache } from "../../services/auction/fee-cache";
import { createPriceSources } from "../../shared/protocol/price-sources";
import { refreshPlans } from "../../services/auction/refreshers";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";

const TM = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const ORACLE = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0";
const USDC_1 = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
const USDC_10 = "0x7F5c764cBc14f9669B88837ca1490cCa17c31607";
const TOKEN_1337 = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const GWEI = 10n ** 9n;
const NOW = 1_800_000_000_000;

function config(): RouterConfig {
  return loadConfig(
    {
      adminToken: "a-long-enough-admin-token-for-tests",
      mnemonic: "test test test test test test test test test test test junk",
      chainConfig: {
        "1": { providers: ["http://127.0.0.1:8545"], transactionManagerAddress: TM, priceOracleAddress: ORACLE },
        "10": {
          providers: ["http://127.0.0.1:8546"],
          transactionManagerAddress: TM,
          nativeMainnetEquivalent: ZeroAddress,
        },
        "1337": { providers: ["http://127.0.0.1:8547"], transactionManagerAddress: TM },
      },
      swapPools: [
        {
          assets: [
            { chainId: 10, assetId: USDC_10, mainnetEquivalent: USDC_1 },
            { chainId: 1, assetId: USDC_1 },
          ],
        },
        {
          assets: [
            { chainId: 1337, assetId: TOKEN_1337 },
            { chainId: 1, assetId: USDC_1 },
          ],
        },
      ],
    },
    {},
    { deployments: new Map() },
  ).config;
}

describe("auction fee estimator (docs/protocol.md#gas-fee from the refreshers' cache)", () => {
  let cache: FeeCache;
  let nowMs = NOW;
  const cfg = config();
  const sources = createPriceSources(cfg);
  const fees = (): ReturnType<typeof createFeeEstimator> =>
    createFeeEstimator({ cache, sources, maxAgeMs: 120_000, nowMs: () => nowMs });

  beforeEach(() => {
    nowMs = NOW;
    cache = createFeeCache();
    cache.prices.set(`1:${USDC_1.toLowerCase()}`, { value: parseEther("1"), atMs: NOW });
    cache.prices.set(`1:${ZeroAddress}`, { value: parseEther("2000"), atMs: NOW });
    cache.gasPrices.set(1, { value: 30n * GWEI, atMs: NOW });
    cache.gasPrices.set(10, { value: GWEI / 1000n, atMs: NOW });
    cache.decimals.set(`10:${USDC_10.toLowerCase()}`, 6);
  });

  it("prices a mainnet-equivalent asset and a mainnet-equivalent native token on chain 1, with Optimism's L1 term", () => {
    const fee = fees().gasFeeInAsset({ chainId: 10, assetId: USDC_10, decimals: 6, method: "prepare" });
    // L2: 0.001 gwei × 200 000 gas × 2000 USD = 0.0004 USD = 400 units; L1: 30 gwei × 20 623 gas × 2000 USD = 1.23738 USD.
    expect(fee).toBe(400n + 1_237_380n);
  });

  it("is cold (undefined) when a price, the chain's gas price or chain 1's gas price for the L1 term is missing or too old", () => {
    nowMs = NOW + 120_001;
    expect(fees().gasFeeInAsset({ chainId: 10, assetId: USDC_10, decimals: 6, method: "prepare" })).toBeUndefined();
    nowMs = NOW;
    cache.gasPrices.delete(1);
    expect(fees().gasFeeInAsset({ chainId: 10, assetId: USDC_10, decimals: 6, method: "prepare" })).toBeUndefined();
  });

  it("reuses a fee only while the cache holds the same entries: a refresh, an age or an extra gas re-prices", () => {
    const estimator = fees();
    const prepare = { chainId: 10, assetId: USDC_10, decimals: 6, method: "prepare" } as const;
    expect(estimator.gasFeeInAsset(prepare)).toBe(400n + 1_237_380n);
    // The refreshers replace an entry on each read: a new L2 gas price (×2) changes the L2 term only.
    cache.gasPrices.set(10, { value: (2n * GWEI) / 1000n, atMs: NOW });
    expect(estimator.gasFeeInAsset(prepare)).toBe(800n + 1_237_380n);
    expect(estimator.gasFeeInAsset({ ...prepare, method: "fulfill" })).toBe(680n + 837_900n);
    // A relay's call-data gas is added to the L2 limit each time, never served from the plain fee.
    expect(estimator.gasFeeInAsset({ ...prepare, extraGas: 100_000n })).toBe(1_200n + 1_237_380n);
    nowMs = NOW + 120_001;
    expect(estimator.gasFeeInAsset(prepare)).toBeUndefined();
  });

  it("is 0 when the chosen chain has no oracle (1337: no oracle, no equivalents)", () => {
    expect(fees().gasFeeInAsset({ chainId: 1337, assetId: TOKEN_1337, decimals: 18, method: "prepare" })).toBe(0n);
  });

  it("knows decimals from the cache, 18 for native, undefined while unread", () => {
    expect(fees().decimals(10, USDC_10.toLowerCase())).toBe(6);
    expect(fees().decimals(10, ZeroAddress)).toBe(18);
    expect(fees().decimals(1337, TOKEN_1337)).toBeUndefined();
  });

  it("plans the refreshers: prices on chain 1, gas prices of pool chains plus chain 1 for Optimism, decimals per chain", () => {
    const plans = new Map(refreshPlans(cfg, sources).map((p) => [p.chainId, p]));
    expect([...(plans.get(1)?.priceAddresses ?? [])].sort()).toEqual([USDC_1.toLowerCase(), ZeroAddress].sort());
    expect(plans.get(1)?.oracle).toBe(ORACLE);
    expect(plans.get(1)?.gasPrice).toBe(true);
    expect(plans.get(10)?.priceAddresses).toEqual([]);
    expect(plans.get(10)?.decimalsOf).toEqual([USDC_10]);
    expect(plans.get(1337)?.oracle).toBeUndefined();
    expect(plans.get(1337)?.gasPrice).toBe(true);
  });
});

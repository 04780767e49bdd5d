import { ZeroAddress, parseEther } from "ethers";
import {
  RelayFeeNotCoveredError,
  relayGas,
  type RelayCostContext,
} from "../../services/submitter/operations/relay-cost";
import { contractInterface } from "../../shared/chain/contracts";
import { loadConfig } from "../../shared/config";
import type { ChainProvider } from "../../shared/chain/chain-provider";
import { createLogger } from "../../shared/logging/create-logger";
import type { RelayFulfillJobData } from "../../shared/queues";
import type { TransactionData } from "../../shared/protocol/types";

/**
 * The relay's spending caps from its estimate (relay-cost.ts), with the chain reads answered in process: the oracle
 * (USD × 1e18 per token), ERC20 decimals, and a fixed fee per gas. The whole relay path, real contracts included,
 * is test/adversarial/relay-spend.test.ts.
 */
const TM = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const ORACLE = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0";
const TOKEN = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const GWEI = 10n ** 9n;

function context(p: {
  oracle: boolean;
  prices?: Record<string, bigint>;
  feePerGas: bigint;
  allowUnpricedRelay?: boolean;
}): RelayCostContext {
  const chain = (extra: Record<string, unknown> = {}) => ({
    providers: ["http://127.0.0.1:8545"],
    transactionManagerAddress: TM,
    ...extra,
  });
  const config = loadConfig(
    {
      adminToken: "a-long-enough-admin-token-for-tests",
      mnemonic: "test test test test test test test test test test test junk",
      chainConfig: {
        "1": chain(),
        "1338": chain({
          ...(p.oracle ? { priceOracleAddress: ORACLE } : {}),
          allowUnpricedRelay: p.allowUnpricedRelay ?? false,
        }),
      },
      swapPools: [
        {
          assets: [
            { chainId: 1338, assetId: TOKEN },
            { chainId: 1, assetId: TOKEN },
          ],
        },
      ],
    },
    {},
  ).config;
  const oracle = contractInterface("ConnextPriceOracle");
  const provider = {
    call: async (tx: { to?: string | null; data?: string | null }) => {
      if (tx.to?.toLowerCase() === ORACLE.toLowerCase()) {
        const [address] = oracle.decodeFunctionData("getTokenPrice", tx.data ?? "0x") as unknown as [string];
        return oracle.encodeFunctionResult("getTokenPrice", [p.prices?.[address.toLowerCase()] ?? 0n]);
      }
      // ERC20 decimals() of TOKEN: 6.
      return `0x${(6).toString(16).padStart(64, "0")}`;
    },
  } as unknown as ChainProvider;
  return {
    config,
    chain: config.chainConfig["1338"],
    chainId: 1338,
    provider,
    readProvider: () => provider,
    gasPrice: async () => ({ type: 0, gasPrice: p.feePerGas }),
    logger: createLogger({ level: "silent", service: "test" }),
  } as unknown as RelayCostContext;
}

function job(relayerFee: bigint): RelayFulfillJobData {
  return {
    chainId: 1338,
    txData: { transactionId: `0x${"ab".repeat(32)}`, receivingAssetId: TOKEN } as unknown as TransactionData,
    relayerFee: relayerFee.toString(),
    signature: "0x",
    callData: "0x",
  };
}

describe("relayGas: a relay's gas limit and fee per gas never exceed what the user's fee pays for", () => {
  // Native at 2 000 USD, the 6-decimal token at 1 USD: 1 token unit (1e-6 USD) pays for 5e8 wei.
  const prices = { [ZeroAddress]: parseEther("2000"), [TOKEN.toLowerCase()]: parseEther("1") };

  it("priced: caps the gas at budget / fee per gas and the fee per gas at budget / gas limit; refuses an estimate above", async () => {
    const ctx = context({ oracle: true, prices, feePerGas: 10n * GWEI });
    // The default 10 %: 1 000 units reach a cost priced at up to 1 112 units (1 112 × 0.9 = 1 000.8, rounded down),
    // and a cost is priced at 1 112 units up to 1 113 × 5e8 wei − 1.
    const fee = 1_000n;
    const gas = await relayGas(ctx, job(fee), 40n);
    expect(gas.budgetWei).toBe(556_499_999_999n);
    expect(gas.gasLimit).toBe(48n); // the estimate + 20 %, below budget / fee per gas (55)
    expect(gas.maxFeePerGas! * gas.gasLimit).toBeLessThanOrEqual(gas.budgetWei!);
    expect(gas.maxFeePerGas).toBeGreaterThanOrEqual(10n * GWEI);

    const tight = await relayGas(ctx, job(fee), 50n);
    expect(tight.gasLimit).toBe(55n); // the headroom cut to what the fee pays for
    expect(tight.maxFeePerGas! * tight.gasLimit).toBeLessThanOrEqual(tight.budgetWei!);

    await expect(relayGas(ctx, job(fee), 56n)).rejects.toBeInstanceOf(RelayFeeNotCoveredError);
  });

  it("unpriced (no oracle on the chain): refused before anything is signed, since the fee pays for nothing", async () => {
    const ctx = context({ oracle: false, feePerGas: 10n * GWEI });
    await expect(relayGas(ctx, job(10n ** 30n), 100_000n)).rejects.toMatchObject({ code: "RELAY_UNPRICED" });
  });

  it("unpriced with allowUnpricedRelay: relays at most the chain's built-in fulfill gas, with no fee ceiling of its own", async () => {
    const ctx = context({ oracle: false, feePerGas: 10n * GWEI, allowUnpricedRelay: true });
    expect(await relayGas(ctx, job(0n), 100_000n)).toEqual({ gasLimit: 120_000n, budgetWei: undefined });
    expect((await relayGas(ctx, job(0n), 190_000n)).gasLimit).toBe(200_000n);
    await expect(relayGas(ctx, job(10n ** 30n), 2_572_638n)).rejects.toMatchObject({ code: "RELAY_FEE_NOT_COVERED" });
  });

  it("a price of 0 from the oracle counts as unpriced", async () => {
    const ctx = context({ oracle: true, prices: { [ZeroAddress]: parseEther("2000") }, feePerGas: GWEI });
    await expect(relayGas(ctx, job(10n ** 30n), 100_000n)).rejects.toMatchObject({ code: "RELAY_UNPRICED" });
    const allowed = context({
      oracle: true,
      prices: { [ZeroAddress]: parseEther("2000") },
      feePerGas: GWEI,
      allowUnpricedRelay: true,
    });
    await expect(relayGas(allowed, job(10n ** 30n), 300_000n)).rejects.toMatchObject({ code: "RELAY_FEE_NOT_COVERED" });
  });
});

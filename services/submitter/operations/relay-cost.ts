import { errorClass } from "../../../shared/errors";
import { getGasPrice } from "../../../shared/chain/gas-price";
import { readOraclePrice } from "../../../shared/chain/oracle-price";
import { createDecimalsReader } from "../../../shared/chain/router-balances";
import type { RouterConfig } from "../../../shared/config/types";
import { feeCap, type Fee } from "../../../shared/protocol/gas";
import { OPTIMISM_CHAIN_ID, gasLimitOf, gasLimitsFor, l1GasLimitOf } from "../../../shared/protocol/gas-limits";
import { createPriceSources, type PriceSource, type PriceSources } from "../../../shared/protocol/price-sources";
import { relayerFeeBudgetWei } from "../../../shared/protocol/relayer-fee";
import type { RelayFulfillJobData } from "../../../shared/queues";
import { GAS_LIMIT_HEADROOM_PERCENT } from "./estimated-call";
import { LifecycleError } from "./errors";
import { chainConfigOf, readProviderOf, type LifecycleContext } from "./lifecycle";

/** The user's relayer fee does not pay for the gas the relay needs (the estimate, at today's fee per gas). */
export class RelayFeeNotCoveredError extends errorClass(LifecycleError, "RELAY_FEE_NOT_COVERED", "terminal") {}

/**
 * The relay's fee cannot be priced (no oracle, or a price of 0), so it pays for nothing, and the chain's
 * `allowUnpricedRelay` is off (the default): the router does not spend gas no fee covers.
 */
export class RelayUnpricedError extends errorClass(LifecycleError, "RELAY_UNPRICED", "terminal") {}

/** What a relay's send needs beyond the lifecycle: the fee a new transaction would pay now. */
export interface RelayCostContext extends LifecycleContext {
  readonly gasPrice: () => Promise<Fee>;
}

/** The relay's transaction limits: never more gas, nor more per gas, than the user's fee pays for. */
export interface RelayGas {
  readonly gasLimit: bigint;
  /** Undefined when the cost cannot be priced: the gas is then capped at a plain fulfill's. */
  readonly maxFeePerGas?: bigint;
  /** Native wei the fee pays for (undefined: unpriced), for the job's log and errors. */
  readonly budgetWei?: bigint;
}

/**
 * The relay priced after its estimate, with the auction's price source (the chain's ConnextPriceOracle, read
 * through the same mainnet equivalents, shared/protocol/price-sources.ts) and the same threshold rule
 * (relayerFeeBudgetWei): the fee pays for `budget` native wei, L1 data included on Optimism.
 * - priced: the gas limit is the estimate plus headroom, cut to what the budget pays at the current fee per gas,
 *   and the fee per gas (first send and bumps) is capped so that gas limit × fee stays within the budget;
 * - unpriced (no oracle for the asset or the native token, a price of 0): refused (RELAY_UNPRICED) unless the
 *   chain's allowUnpricedRelay is on; then, as with a threshold of 100 (any fee accepted), the router relays only
 *   a plain fulfill: at most the chain's built-in fulfill gas (gas-limits.ts).
 * An estimate above the cap is refused (RELAY_FEE_NOT_COVERED) before anything is signed: call-data gas is
 * the estimate's, never the requester's `callDataGas`.
 */
export async function relayGas(ctx: RelayCostContext, data: RelayFulfillJobData, estimate: bigint): Promise<RelayGas> {
  const withHeadroom = (estimate * (100n + GAS_LIMIT_HEADROOM_PERCENT)) / 100n;
  const perGas = feeCap(await ctx.gasPrice());
  const budgetWei = await relayBudgetWei(ctx, data);
  let maxGas: bigint;
  if (budgetWei === undefined) {
    // Undefined with a threshold below 100 means no price: relayed only if the operator chose to relay unpaid.
    if (ctx.chain.relayerFeeThreshold < 100 && !ctx.chain.allowUnpricedRelay) {
      throw new RelayUnpricedError(
        `the relayer fee cannot be priced on chain ${ctx.chainId}, and allowUnpricedRelay is off: nothing is relayed unpaid`,
        { transactionId: data.txData.transactionId, relayerFee: data.relayerFee },
      );
    }
    maxGas = gasLimitOf(gasLimitsFor(ctx.chainId), "fulfill");
  } else if (perGas === 0n) {
    maxGas = withHeadroom;
  } else {
    maxGas = budgetWei / perGas;
  }
  if (estimate > maxGas) {
    throw new RelayFeeNotCoveredError(
      budgetWei === undefined
        ? `the relay needs ${estimate} gas; without a price for its fee the router relays at most a plain fulfill's ${maxGas}`
        : `the relay needs ${estimate} gas at ${perGas} wei per gas; the relayer fee ${data.relayerFee} pays for ${maxGas}`,
      {
        transactionId: data.txData.transactionId,
        estimatedGas: estimate.toString(),
        maxGas: maxGas.toString(),
        feePerGas: perGas.toString(),
        relayerFee: data.relayerFee,
        budgetWei: budgetWei?.toString(),
      },
    );
  }
  const gasLimit = withHeadroom < maxGas ? withHeadroom : maxGas;
  if (budgetWei === undefined || gasLimit === 0n) {
    return { gasLimit, budgetWei };
  }
  return { gasLimit, maxFeePerGas: budgetWei / gasLimit, budgetWei };
}

/** Native wei the user's fee pays for, within the chain's relayerFeeThreshold, net of Optimism's L1 data fee. */
async function relayBudgetWei(ctx: RelayCostContext, data: RelayFulfillJobData): Promise<bigint | undefined> {
  const { txData } = data;
  const sources = priceSourcesOf(ctx.config);
  const token = sources.asset(ctx.chainId, txData.receivingAssetId);
  const native = sources.native(ctx.chainId);
  const sameSource = token.chainId === native.chainId && token.address === native.address;
  let nativePrice = 1n;
  let tokenPrice = 1n;
  if (!sameSource) {
    const prices = await Promise.all([priceOf(ctx, sources, native), priceOf(ctx, sources, token)]);
    if (prices[0] === undefined || prices[1] === undefined) {
      return undefined;
    }
    [nativePrice, tokenPrice] = prices;
  }
  const budget = relayerFeeBudgetWei({
    offeredFee: BigInt(data.relayerFee),
    thresholdPercent: ctx.chain.relayerFeeThreshold,
    nativePrice,
    tokenPrice,
    decimals: await createDecimalsReader(ctx.provider)(txData.receivingAssetId),
  });
  if (budget === undefined || ctx.chainId !== OPTIMISM_CHAIN_ID) {
    return budget;
  }
  const l1Wei = await optimismL1Wei(ctx);
  if (l1Wei === undefined) {
    return undefined;
  }
  return budget > l1Wei ? budget - l1Wei : 0n;
}

/** The oracle price of one source, or undefined when its chain has no oracle (the auction's fee is 0 then). */
async function priceOf(ctx: RelayCostContext, sources: PriceSources, source: PriceSource): Promise<bigint | undefined> {
  const oracle = sources.oracle(source.chainId);
  if (oracle === undefined || ctx.config.chainConfig[String(source.chainId)] === undefined) {
    return undefined;
  }
  return readOraclePrice(readProviderOf(ctx, source.chainId), oracle, source.address);
}

/** Optimism's L1 data fee of a fulfill, priced with chain 1's gas price as the auction does; undefined without chain 1. */
async function optimismL1Wei(ctx: RelayCostContext): Promise<bigint | undefined> {
  if (ctx.config.chainConfig["1"] === undefined) {
    return undefined;
  }
  const l1Fee = await getGasPrice(chainConfigOf(ctx, 1), { provider: readProviderOf(ctx, 1), logger: ctx.logger });
  return feeCap(l1Fee) * l1GasLimitOf(gasLimitsFor(ctx.chainId), "fulfill");
}

/** Built from the config once per process (the config never changes while it runs). */
const sourcesByConfig = new WeakMap<RouterConfig, PriceSources>();
function priceSourcesOf(config: RouterConfig): PriceSources {
  let sources = sourcesByConfig.get(config);
  if (sources === undefined) {
    sources = createPriceSources(config);
    sourcesByConfig.set(config, sources);
  }
  return sources;
}

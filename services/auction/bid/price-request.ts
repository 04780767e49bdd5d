import { getAddress } from "ethers";
import { checkAuctionExpiry } from "../../../shared/protocol/auction-expiry";
import { parseAuctionPayload } from "../../../shared/protocol/auction-payload";
import { quoteAuction, type AuctionQuote } from "../../../shared/protocol/auction-quote";
import { isSwapSupported } from "../../../shared/protocol/pools";
import type { AuctionPayload } from "../../../shared/protocol/types";
import type { AuctionContext } from "../context";
import { refused, type Outcome } from "./outcome";

/** What a bid needs of a configured chain, read from the config once. */
export interface ChainFacts {
  readonly txManager: string;
  readonly minGasWei: bigint;
}

/** Every configured chain's facts, by chain id. */
export function chainFactsOf(config: AuctionContext["config"]): ReadonlyMap<number, ChainFacts> {
  const chains = new Map<number, ChainFacts>();
  for (const chain of Object.values(config.chainConfig)) {
    chains.set(chain.chainId, {
      txManager: getAddress(chain.transactionManagerAddress),
      minGasWei: BigInt(chain.minGas),
    });
  }
  return chains;
}

/** A request that passed every pure step: what the reservation and the bid need. */
export interface Priced {
  readonly payload: AuctionPayload;
  readonly sending: ChainFacts;
  readonly receiving: ChainFacts;
  readonly quote: AuctionQuote;
  readonly nowSec: number;
  /** Sending-asset units. */
  readonly amount: bigint;
  readonly inputDecimals: number;
  readonly outputDecimals: number;
}

export type PriceRequest = (data: unknown, nowMs: number) => Outcome | Priced;

/**
 * The request's pure steps (docs/auction.md, "Processing order" 1–7): modes → payload → chains → pool → expiry
 * window → decimals → router fee and gas fee. A refusal, or what the bid needs. No I/O: prices, gas prices and
 * decimals come from the refreshers' cache, so the warm-up can run it too.
 */
export function createPriceRequest(ctx: AuctionContext, chains: ReadonlyMap<number, ChainFacts>): PriceRequest {
  return (data, nowMs) => {
    if (ctx.config.cleanUpMode) {
      return refused(
        "RouterInCleanUpMode",
        "cleanUpMode is on: the router finishes open transfers and takes no new ones",
      );
    }
    if (ctx.config.diagnosticMode) {
      return refused(
        "RouterInDiagnosticMode",
        "diagnosticMode is on: no lifecycle runs, so the router takes no transfers",
      );
    }
    const parsed = parseAuctionPayload(data);
    if (!parsed.ok) {
      return { result: "refused", refusal: parsed.refusal, fields: {} };
    }
    const { payload, amount } = parsed;
    const sending = chains.get(payload.sendingChainId);
    const receiving = chains.get(payload.receivingChainId);
    if (sending === undefined || receiving === undefined) {
      const missing = sending === undefined ? payload.sendingChainId : payload.receivingChainId;
      return refused("ProvidersNotAvailable", `chain ${missing} is not configured`);
    }
    const sendingAsset = { chainId: payload.sendingChainId, assetId: payload.sendingAssetId };
    const receivingAsset = { chainId: payload.receivingChainId, assetId: payload.receivingAssetId };
    if (!isSwapSupported(ctx.config.swapPools, sendingAsset, receivingAsset)) {
      return refused("SwapInvalid", "the sending and receiving assets are not in one swap pool");
    }
    const nowSec = Math.floor(nowMs / 1000);
    const expiryRefusal = checkAuctionExpiry({ expiry: payload.expiry, nowSec });
    if (expiryRefusal !== null) {
      return { result: "refused", refusal: expiryRefusal, fields: {} };
    }

    const inputDecimals = ctx.fees.decimals(payload.sendingChainId, payload.sendingAssetId);
    const outputDecimals = ctx.fees.decimals(payload.receivingChainId, payload.receivingAssetId);
    if (inputDecimals === undefined || outputDecimals === undefined) {
      return refused("ValueCold", "token decimals not read yet");
    }
    const sendingFee = ctx.fees.gasFeeInAsset({ ...sendingAsset, decimals: outputDecimals, method: "fulfill" });
    const receivingFee = ctx.fees.gasFeeInAsset({ ...receivingAsset, decimals: outputDecimals, method: "prepare" });
    if (sendingFee === undefined || receivingFee === undefined) {
      return refused("ValueCold", "an oracle price or gas price is missing or older than the freshness bound");
    }
    const quote = quoteAuction({ amount, inputDecimals, outputDecimals, gasFee: sendingFee + receivingFee });
    if ("code" in quote) {
      return { result: "refused", refusal: quote, fields: {} };
    }
    return { payload, sending, receiving, quote, nowSec, amount, inputDecimals, outputDecimals };
  };
}

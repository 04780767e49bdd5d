import { ZeroAddress } from "ethers";
import type { ChainConfig } from "../../../shared/config/types";
import type { FulfillMetaTx } from "../../../shared/protocol/metatx-request";
import { checkRelayerFee } from "../../../shared/protocol/relayer-fee";
import { sameHex } from "../../../shared/protocol/values";
import type { AuctionContext } from "../context";
import {
  CallDataGasRequiredError,
  NotEnoughRelayerFeeError,
  RelayUnpricedError,
  RelayerFeeUnavailableError,
} from "./relay-errors";

export interface RelayFeeDecision {
  /** The router's estimate of the fulfill's cost in the receiving asset. */
  readonly expectedFee: bigint;
  /** The smallest offer accepted (expected × (100 − threshold) / 100). */
  readonly lowerBound: bigint;
}

/**
 * docs/protocol.md#relayer-fee for a Fulfill, from the fee caches (no RPC): the fulfill's gas plus the call's gas,
 * priced in the receiving asset on the receiving chain; the offer must reach the chain's relayerFeeThreshold below it.
 * The call's gas is the requester's `callDataGas`; with no call (callTo zero, or call data "0x") it is 0;
 * otherwise the request is refused, since estimating the call would need an RPC on the request path.
 */
export function decideRelayFee(ctx: AuctionContext, chain: ChainConfig, request: FulfillMetaTx): RelayFeeDecision {
  const { txData } = request;
  const context = { transactionId: txData.transactionId, chainId: request.chainId };
  // An unpriced fee is 0 and passes any offer, yet the relay's gas is the router's: refused unless the operator
  // chose to relay unpaid (or accepts any fee with a threshold of 100), as the submitter refuses it too.
  if (
    !chain.allowUnpricedRelay &&
    chain.relayerFeeThreshold < 100 &&
    ctx.fees.unpriced(request.chainId, txData.receivingAssetId)
  ) {
    throw new RelayUnpricedError(
      "the relayer fee cannot be priced on this chain (no price oracle for the asset or the native token)",
      context,
    );
  }
  const extraGas = callDataGas(request);
  const decimals = ctx.fees.decimals(request.chainId, txData.receivingAssetId);
  const expectedFee =
    decimals === undefined
      ? undefined
      : ctx.fees.gasFeeInAsset({
          chainId: request.chainId,
          assetId: txData.receivingAssetId,
          decimals,
          method: "fulfill",
          extraGas,
        });
  if (expectedFee === undefined) {
    throw new RelayerFeeUnavailableError(
      "the relayer fee cannot be priced yet (price, gas price or decimals not cached)",
      context,
    );
  }
  const offeredFee = BigInt(request.relayerFee);
  const check = checkRelayerFee({ offeredFee, expectedFee, thresholdPercent: chain.relayerFeeThreshold });
  if (!check.ok) {
    throw new NotEnoughRelayerFeeError(`relayer fee ${offeredFee} is below the accepted minimum ${check.lowerBound}`, {
      ...context,
      relayerFee: offeredFee.toString(),
      expectedFee: expectedFee.toString(),
      lowerBound: check.lowerBound.toString(),
      relayerFeeThreshold: chain.relayerFeeThreshold,
    });
  }
  return { expectedFee, lowerBound: check.lowerBound };
}

function callDataGas(request: FulfillMetaTx): bigint {
  if (request.callDataGas !== undefined) {
    return BigInt(request.callDataGas);
  }
  if (request.callData === "0x" || sameHex(request.txData.callTo, ZeroAddress)) {
    return 0n;
  }
  throw new CallDataGasRequiredError("the fulfill calls callTo with call data: give callDataGas to price it", {
    transactionId: request.txData.transactionId,
    callTo: request.txData.callTo,
  });
}

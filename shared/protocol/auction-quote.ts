import { amountAfterRouterFee } from "./amounts";
import { AuctionRefusal, refusal } from "./auction-refusal";

export interface AuctionQuoteParams {
  /** Sending-asset units. */
  readonly amount: bigint;
  readonly inputDecimals: number;
  readonly outputDecimals: number;
  /** docs/protocol.md#gas-fee `gasFeeInReceivingToken`, receiving-asset units. */
  readonly gasFee: bigint;
}

export interface AuctionQuote {
  /** What the bid promises: after the 0.05 % router fee and the gas fee, receiving-asset units. */
  readonly amountReceived: bigint;
  readonly gasFee: bigint;
}

/**
 * docs/protocol.md#router-fee then docs/protocol.md#gas-fee: decimal conversion and router fee, minus the gas fee. A
 * quote of zero is refused like a gas fee above the amount (NotEnoughAmount): the receiving prepare refuses a zero
 * amount (verify-sender.ts `receiver-amount-zero`), so the router never signs one.
 */
export function quoteAuction(params: AuctionQuoteParams): AuctionQuote | AuctionRefusal {
  const afterFee = amountAfterRouterFee({
    amount: params.amount,
    inputDecimals: params.inputDecimals,
    outputDecimals: params.outputDecimals,
  });
  if (afterFee <= params.gasFee) {
    return refusal(
      "NotEnoughAmount",
      `amount after router fee ${afterFee} does not exceed the gas fee ${params.gasFee}`,
    );
  }
  return { amountReceived: afterFee - params.gasFee, gasFee: params.gasFee };
}

import type { MessagingRequest } from "../../../shared/messaging/types";
import { refusal, type AuctionRefusal } from "../../../shared/protocol/auction-refusal";
import type { ReservedBid } from "../request-claims";

/** The structured result of one auction, logged once (outcome-log.ts). */
export interface Outcome {
  readonly result: "bid" | "quote" | "refused";
  readonly refusal?: AuctionRefusal;
  readonly fields: Record<string, unknown>;
  /** Reserved under the request's claim but not sent (StoreNotReplicated): a retry re-sends this very bid. */
  readonly reserved?: ReservedBid;
  /** A refusal for liquidity: its route and the request's amount in USD (undefined: no fresh price). */
  readonly refusedVolume?: { readonly route: string; readonly usd: number | undefined };
}

/** How an answer leaves: the messaging layer's respond, or the warm-up's sink. */
export type Reply = (request: MessagingRequest, data: unknown) => void;

export function refused(code: AuctionRefusal["code"], detail: string): Outcome {
  return { result: "refused", refusal: refusal(code, detail), fields: {} };
}

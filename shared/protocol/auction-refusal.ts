/**
 * Why the auction gives no bid. The router answers only with a bid (docs/protocol.md#replies): a refusal is logged
 * once, with its code, and never published. The first group are the original's names
 * (docs/protocol.md#auction-refusals); the rest are ours.
 */
export type AuctionRefusalCode =
  // the original's names (docs/protocol.md#auction-refusals)
  | "ParamsInvalid"
  | "ZeroValueBid"
  | "SwapInvalid"
  | "AuctionRateExceeded"
  | "AuctionExpired"
  | "ProvidersNotAvailable"
  | "NotEnoughAmount"
  | "NotEnoughLiquidity"
  | "LiquidityUnavailable"
  | "NotEnoughGas"
  // ours
  | "AmountInvalid"
  | "ExpiryOutOfWindow"
  | "RouterInCleanUpMode"
  | "RouterInDiagnosticMode"
  | "InventoryBelowMinimum"
  | "ValueCold"
  | "StaleBalance"
  | "StoreUnavailable"
  | "StoreNotReplicated"
  | "SignerUnavailable"
  | "ClaimLost"
  | "InternalError";

export interface AuctionRefusal {
  readonly code: AuctionRefusalCode;
  /** Human-readable, for the log line; never holds a secret. */
  readonly detail: string;
}

/**
 * Refusals for want of liquidity on the receiving chain: counted in router_refused_volume_usd_total (the swaps the
 * router could have carried with more liquidity there).
 */
export function isLiquidityRefusal(code: AuctionRefusalCode): boolean {
  return code === "NotEnoughLiquidity" || code === "LiquidityUnavailable" || code === "InventoryBelowMinimum";
}

export function refusal(code: AuctionRefusalCode, detail: string): AuctionRefusal {
  return { code, detail };
}

/**
 * Refusals that are routine on a shared messaging network (every router receives every user's auction, most
 * for pairs it does not serve): logged at debug so they do not drown the log. Codes that mean the router
 * itself cannot bid (cold caches, no gas, store or signer down) are warnings; the rest are info.
 */
export function refusalLogLevel(code: AuctionRefusalCode): "debug" | "info" | "warn" {
  switch (code) {
    case "SwapInvalid":
    case "ProvidersNotAvailable":
      return "debug";
    case "ValueCold":
    case "StaleBalance":
    case "NotEnoughGas":
    case "StoreUnavailable":
    case "StoreNotReplicated":
    case "SignerUnavailable":
    case "ClaimLost":
    case "InternalError":
      return "warn";
    default:
      return "info";
  }
}

/**
 * Refusals for data this instance does not have yet (a cache or a poller's balance still cold, Redis briefly
 * away), as opposed to a verdict on the request. Right after a start they clear within seconds, and the SDK
 * never asks twice, so the auction retries these within the requester's window instead of staying silent.
 */
export function isColdRefusal(code: AuctionRefusalCode): boolean {
  return (
    code === "ValueCold" || code === "StaleBalance" || code === "StoreUnavailable" || code === "StoreNotReplicated"
  );
}

import { classifyVariant, NOT_PREPARED_VARIANT_DIGEST } from "./digests";
import type { TransferRecord } from "./types";
import { abiBytes32 } from "./values";

/**
 * How one side of a transfer in the store compares with the contract's `variantTransactionData` for it:
 * - `agrees`: the store shows what the chain has (nothing, a live prepare with the same data, or a completion);
 * - `store-behind`: the chain has more than the store (a prepare the store lacks, or a fulfill or cancel of a
 *   side the store still shows Prepared): that side's logs must be found and stored (a missed log);
 * - `store-ahead`: the store shows something the chain does not have (a prepare or a completion re-orged away,
 *   a chain reset), or different amounts: nothing may be done on the store's word for this transfer.
 */
export type VariantVerdict = "agrees" | "store-behind" | "store-ahead";

export function variantVerdict(stored: TransferRecord | undefined, actual: string): VariantVerdict {
  if (stored === undefined) {
    return abiBytes32(actual, "actual") === NOT_PREPARED_VARIANT_DIGEST ? "agrees" : "store-behind";
  }
  const onChain = classifyVariant(actual, stored.txData);
  if (stored.status === "Prepared") {
    return onChain === "prepared-matching" ? "agrees" : onChain === "completed" ? "store-behind" : "store-ahead";
  }
  return onChain === "completed" ? "agrees" : "store-ahead";
}

import { AbiCoder, ZeroHash, keccak256 } from "ethers";
import { InvariantTransactionData, TransactionData } from "./types";
import { abiAddress, abiBytes32, parseUint } from "./values";

/**
 * docs/protocol.md#structs: struct order of InvariantTransactionData. It differs from the JSON order (receivingAddress
 * before callTo) and from TransactionData (callDataHash and transactionId after the chain ids here).
 */
export const INVARIANT_TRANSACTION_DATA_ABI_TYPE =
  "tuple(address receivingChainTxManagerAddress, address user, address router, address initiator, " +
  "address sendingAssetId, address receivingAssetId, address sendingChainFallback, address receivingAddress, " +
  "address callTo, uint256 sendingChainId, uint256 receivingChainId, bytes32 callDataHash, bytes32 transactionId)";

export const VARIANT_TRANSACTION_DATA_ABI_TYPE = "tuple(uint256 amount, uint256 expiry, uint256 preparedBlockNumber)";

/** What `variantTransactionData(digest)` returns for a transfer never prepared on that chain. */
export const NOT_PREPARED_VARIANT_DIGEST = ZeroHash;

/** A variant in any representation: the JSON one (TransactionData fits) or bigints read from chain. */
export interface VariantLike {
  amount: bigint | string;
  expiry: bigint | number;
  preparedBlockNumber: bigint | number;
}

const coder = AbiCoder.defaultAbiCoder();

/** The invariant fields of a TransactionData. */
export function invariantOf(txData: TransactionData): InvariantTransactionData {
  return {
    receivingChainTxManagerAddress: txData.receivingChainTxManagerAddress,
    user: txData.user,
    router: txData.router,
    initiator: txData.initiator,
    sendingAssetId: txData.sendingAssetId,
    receivingAssetId: txData.receivingAssetId,
    sendingChainFallback: txData.sendingChainFallback,
    callTo: txData.callTo,
    receivingAddress: txData.receivingAddress,
    sendingChainId: txData.sendingChainId,
    receivingChainId: txData.receivingChainId,
    callDataHash: txData.callDataHash,
    transactionId: txData.transactionId,
  };
}

/** `keccak256(abi.encode(invariant))`: the key of `variantTransactionData` (a static tuple, no offset word). */
export function invariantDigest(invariant: InvariantTransactionData): string {
  const tuple = {
    receivingChainTxManagerAddress: abiAddress(
      invariant.receivingChainTxManagerAddress,
      "receivingChainTxManagerAddress",
    ),
    user: abiAddress(invariant.user, "user"),
    router: abiAddress(invariant.router, "router"),
    initiator: abiAddress(invariant.initiator, "initiator"),
    sendingAssetId: abiAddress(invariant.sendingAssetId, "sendingAssetId"),
    receivingAssetId: abiAddress(invariant.receivingAssetId, "receivingAssetId"),
    sendingChainFallback: abiAddress(invariant.sendingChainFallback, "sendingChainFallback"),
    receivingAddress: abiAddress(invariant.receivingAddress, "receivingAddress"),
    callTo: abiAddress(invariant.callTo, "callTo"),
    sendingChainId: parseUint(invariant.sendingChainId, "sendingChainId"),
    receivingChainId: parseUint(invariant.receivingChainId, "receivingChainId"),
    callDataHash: abiBytes32(invariant.callDataHash, "callDataHash"),
    transactionId: abiBytes32(invariant.transactionId, "transactionId"),
  };
  return keccak256(coder.encode([INVARIANT_TRANSACTION_DATA_ABI_TYPE], [tuple]));
}

/** `keccak256(abi.encode(amount, expiry, preparedBlockNumber))`: the value stored for a prepared side. */
export function variantDigest(variant: VariantLike): string {
  const tuple = {
    amount: parseUint(variant.amount, "amount"),
    expiry: parseUint(variant.expiry, "expiry"),
    preparedBlockNumber: parseUint(variant.preparedBlockNumber, "preparedBlockNumber"),
  };
  return keccak256(coder.encode([VARIANT_TRANSACTION_DATA_ABI_TYPE], [tuple]));
}

/** `variantDigest(0, 0, 0)` (docs/protocol.md#structs). Not the "never prepared" value: that is the zero word. */
export const EMPTY_VARIANT_DIGEST = variantDigest({ amount: 0n, expiry: 0n, preparedBlockNumber: 0n });

/** The value stored once a side is fulfilled or cancelled: the same amount and expiry, block number 0. */
export function completedVariantDigest(amount: bigint | string, expiry: bigint | number): string {
  return variantDigest({ amount, expiry, preparedBlockNumber: 0n });
}

export type VariantClassification = "not-prepared" | "prepared-matching" | "completed" | "mismatch";

/**
 * docs/protocol.md#sanitation-check as a pure function: `actual` is `variantTransactionData(invariantDigest)` read on
 * the target chain, `expected` the variant the router is about to act on.
 * - `not-prepared`: the zero word. A prepare may go ahead; a fulfill or cancel must not.
 * - `prepared-matching`: prepared with exactly this data. A fulfill or cancel may go ahead; a prepare must not.
 * - `completed`: already fulfilled or cancelled. Nothing to send. Checked before `prepared-matching` so that
 *   a variant with `preparedBlockNumber` 0 (never valid for a live side, #F:021) is never acted on.
 * - `mismatch`: anything else (different amount or expiry). Nothing to send; the data we hold is wrong.
 */
export function classifyVariant(actual: string, expected: VariantLike): VariantClassification {
  const stored = abiBytes32(actual, "actual");
  if (stored === NOT_PREPARED_VARIANT_DIGEST) {
    return "not-prepared";
  }
  if (stored === completedVariantDigest(expected.amount, expected.expiry)) {
    return "completed";
  }
  if (stored === variantDigest(expected)) {
    return "prepared-matching";
  }
  return "mismatch";
}

/**
 * Whether two TransactionData name the same transfer (every invariant field, by the digest the contract keys
 * it by). The two sides of one transfer share it; their variants (amount, expiry, block) differ.
 */
export function sameInvariant(a: TransactionData, b: TransactionData): boolean {
  return invariantDigest(invariantOf(a)) === invariantDigest(invariantOf(b));
}

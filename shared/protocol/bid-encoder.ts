import { ProtocolInputError } from "./errors";
import { AuctionBid } from "./types";

/**
 * The docs/protocol.md#bid-encoding encoding written directly as hex, for the auction's hot path: the bid tuple has a
 * fixed layout (an offset word, 18 head words, then the `bytes` tail), so no ABI coder, no per-field objects and no
 * checksum work is needed. Same output as `encodeBid` in bid.ts (cross-checked in the unit tests).
 * Inputs must already be validated (auction-payload.ts); anything malformed still throws here rather than
 * producing bytes that would not decode.
 */

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const HEX = /^0x([0-9a-fA-F]{2})*$/;
const DECIMAL = /^[0-9]+$/;
const UINT256_LIMIT = 1n << 256n;
const ZERO_24 = "0".repeat(24);
const ZERO_64 = "0".repeat(64);
/** Offset of the tuple (one dynamic value) and of `bytes` inside the tuple (after 18 head words). */
const TUPLE_OFFSET_WORD = word(32n);
const BYTES_OFFSET_WORD = word(18n * 32n);

/** `abi.encode(bidTuple)` as 0x-hex, byte-identical to `encodeBid`. */
export function encodeBidFast(bid: AuctionBid): string {
  const data = hexBody(bid.encryptedCallData, "encryptedCallData");
  const byteLength = data.length / 2;
  const padding = (64 - (data.length % 64)) % 64;
  return (
    "0x" +
    TUPLE_OFFSET_WORD +
    addressWord(bid.user, "user") +
    addressWord(bid.router, "router") +
    addressWord(bid.initiator, "initiator") +
    uintWord(bid.sendingChainId, "sendingChainId") +
    addressWord(bid.sendingAssetId, "sendingAssetId") +
    uintWord(bid.amount, "amount") +
    uintWord(bid.receivingChainId, "receivingChainId") +
    addressWord(bid.receivingAssetId, "receivingAssetId") +
    uintWord(bid.amountReceived, "amountReceived") +
    addressWord(bid.receivingAddress, "receivingAddress") +
    bytes32Word(bid.transactionId, "transactionId") +
    uintWord(bid.expiry, "expiry") +
    bytes32Word(bid.callDataHash, "callDataHash") +
    addressWord(bid.callTo, "callTo") +
    BYTES_OFFSET_WORD +
    addressWord(bid.sendingChainTxManagerAddress, "sendingChainTxManagerAddress") +
    addressWord(bid.receivingChainTxManagerAddress, "receivingChainTxManagerAddress") +
    uintWord(bid.bidExpiry, "bidExpiry") +
    word(BigInt(byteLength)) +
    data +
    ZERO_64.slice(0, padding)
  );
}

function word(value: bigint): string {
  return value.toString(16).padStart(64, "0");
}

function addressWord(value: string, field: string): string {
  if (!ADDRESS.test(value)) {
    throw new ProtocolInputError(`${field} must be a 20-byte hex address`, { field });
  }
  return ZERO_24 + value.slice(2).toLowerCase();
}

function bytes32Word(value: string, field: string): string {
  if (!BYTES32.test(value)) {
    throw new ProtocolInputError(`${field} must be 32 bytes of hex`, { field });
  }
  return value.slice(2).toLowerCase();
}

function uintWord(value: number | string, field: string): string {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new ProtocolInputError(`${field} must be a non-negative safe integer`, { field });
    }
    return value.toString(16).padStart(64, "0");
  }
  if (!DECIMAL.test(value)) {
    throw new ProtocolInputError(`${field} must be a decimal integer string`, { field });
  }
  const parsed = BigInt(value);
  if (parsed >= UINT256_LIMIT) {
    throw new ProtocolInputError(`${field} is outside the uint256 range`, { field });
  }
  return word(parsed);
}

function hexBody(value: string, field: string): string {
  if (!HEX.test(value)) {
    throw new ProtocolInputError(`${field} must be 0x-prefixed hex of whole bytes`, { field });
  }
  return value.slice(2).toLowerCase();
}

import { AbiCoder, Result, getAddress, getBytes, hexlify, keccak256, verifyMessage } from "ethers";
import { RouterSigner, sanitizeSignatureV } from "../signer/router-signer";
import { BidDecodeError } from "./errors";
import { AuctionBid } from "./types";
import { abiAddress, abiBytes, abiBytes32, parseUint, toSafeNumber } from "./values";

/**
 * docs/protocol.md#bid-encoding: one tuple, dynamic because of `bytes encryptedCallData`, so the encoding starts with
 * an offset word.
 */
export const AUCTION_BID_ABI_TYPE =
  "tuple(address user, address router, address initiator, uint256 sendingChainId, address sendingAssetId, " +
  "uint256 amount, uint256 receivingChainId, address receivingAssetId, uint256 amountReceived, " +
  "address receivingAddress, bytes32 transactionId, uint256 expiry, bytes32 callDataHash, address callTo, " +
  "bytes encryptedCallData, address sendingChainTxManagerAddress, address receivingChainTxManagerAddress, " +
  "uint256 bidExpiry)";

const coder = AbiCoder.defaultAbiCoder();

/** `abi.encode(bidTuple)` as 0x-hex (640 bytes when `encryptedCallData` is empty). */
export function encodeBid(bid: AuctionBid): string {
  const tuple = {
    user: abiAddress(bid.user, "user"),
    router: abiAddress(bid.router, "router"),
    initiator: abiAddress(bid.initiator, "initiator"),
    sendingChainId: parseUint(bid.sendingChainId, "sendingChainId"),
    sendingAssetId: abiAddress(bid.sendingAssetId, "sendingAssetId"),
    amount: parseUint(bid.amount, "amount"),
    receivingChainId: parseUint(bid.receivingChainId, "receivingChainId"),
    receivingAssetId: abiAddress(bid.receivingAssetId, "receivingAssetId"),
    amountReceived: parseUint(bid.amountReceived, "amountReceived"),
    receivingAddress: abiAddress(bid.receivingAddress, "receivingAddress"),
    transactionId: abiBytes32(bid.transactionId, "transactionId"),
    expiry: parseUint(bid.expiry, "expiry"),
    callDataHash: abiBytes32(bid.callDataHash, "callDataHash"),
    callTo: abiAddress(bid.callTo, "callTo"),
    encryptedCallData: abiBytes(bid.encryptedCallData, "encryptedCallData"),
    sendingChainTxManagerAddress: abiAddress(bid.sendingChainTxManagerAddress, "sendingChainTxManagerAddress"),
    receivingChainTxManagerAddress: abiAddress(bid.receivingChainTxManagerAddress, "receivingChainTxManagerAddress"),
    bidExpiry: parseUint(bid.bidExpiry, "bidExpiry"),
  };
  return coder.encode([AUCTION_BID_ABI_TYPE], [tuple]);
}

/** `keccak256(encodedBid)`; takes the bid or its encoding. */
export function hashBid(bid: AuctionBid | string): string {
  return keccak256(typeof bid === "string" ? abiBytes(bid, "encodedBid") : encodeBid(bid));
}

/**
 * The inverse of `encodeBid`: addresses checksummed, chain ids and times as numbers, amounts as decimal
 * strings, hex lowercase. Refuses anything but the canonical encoding (e.g. trailing bytes, which the ABI
 * coder would ignore), so the decoded bid always re-encodes to exactly the bytes that were signed.
 */
export function decodeBid(encodedBid: string): AuctionBid {
  let bid: AuctionBid;
  try {
    const raw = abiBytes(encodedBid, "encodedBid");
    const [t] = coder.decode([AUCTION_BID_ABI_TYPE], raw) as Result;
    const tuple = (t as Result).toObject() as Record<string, unknown>;
    bid = {
      user: getAddress(String(tuple.user)),
      router: getAddress(String(tuple.router)),
      initiator: getAddress(String(tuple.initiator)),
      sendingChainId: toSafeNumber(tuple.sendingChainId as bigint, "sendingChainId"),
      sendingAssetId: getAddress(String(tuple.sendingAssetId)),
      amount: (tuple.amount as bigint).toString(),
      receivingChainId: toSafeNumber(tuple.receivingChainId as bigint, "receivingChainId"),
      receivingAssetId: getAddress(String(tuple.receivingAssetId)),
      amountReceived: (tuple.amountReceived as bigint).toString(),
      receivingAddress: getAddress(String(tuple.receivingAddress)),
      transactionId: String(tuple.transactionId).toLowerCase(),
      expiry: toSafeNumber(tuple.expiry as bigint, "expiry"),
      callDataHash: String(tuple.callDataHash).toLowerCase(),
      callTo: getAddress(String(tuple.callTo)),
      encryptedCallData: hexlify(tuple.encryptedCallData as string),
      sendingChainTxManagerAddress: getAddress(String(tuple.sendingChainTxManagerAddress)),
      receivingChainTxManagerAddress: getAddress(String(tuple.receivingChainTxManagerAddress)),
      bidExpiry: toSafeNumber(tuple.bidExpiry as bigint, "bidExpiry"),
    };
    if (encodeBid(bid) !== raw) {
      throw new Error("not the canonical encoding");
    }
  } catch (err) {
    throw new BidDecodeError("encodedBid is not an ABI-encoded AuctionBid", {}, { cause: err });
  }
  return bid;
}

/**
 * docs/protocol.md#bid-signature: EIP-191 personal_sign over the 32 raw bytes of the bid hash, by the router signer
 * (also in router-contract mode). A v of 0/1 is rewritten to 27/28.
 */
export async function signBid(signer: RouterSigner, bid: AuctionBid): Promise<string> {
  const signature = await signer.signMessage(getBytes(hashBid(bid)));
  return sanitizeSignatureV(signature);
}

/**
 * The checksummed address that signed the bid (or its encoding; the encoding as received is what the SDK
 * and the original verify). Throws on a malformed signature.
 */
export function recoverBidSigner(bid: AuctionBid | string, signature: string): string {
  return verifyMessage(getBytes(hashBid(bid)), signature);
}

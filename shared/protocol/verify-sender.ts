import { decodeBid, recoverBidSigner } from "./bid";
import { invariantOf } from "./digests";
import { isBidExpired, isReceiverExpiryValid, receiverExpiryFor } from "./expiry";
import { receiverAmountFor } from "./amounts";
import { isSwapSupported } from "./pools";
import {
  AuctionBid,
  InvariantTransactionData,
  SwapPoolLike,
  TransactionData,
  TransferRecord,
  TX_DATA_ADDRESS_FIELDS,
} from "./types";
import { abiAddress, isAddress, isBytes32, isHexBytes, sameHex } from "./values";

/** The bid fields compared one by one with the sending-side data (docs/protocol.md#deviation-bid-fields). */
export type BidCheckedField =
  | "user"
  | "router"
  | "initiator"
  | "sendingChainId"
  | "sendingAssetId"
  | "receivingChainId"
  | "receivingAssetId"
  | "receivingAddress"
  | "transactionId"
  | "expiry"
  | "callDataHash"
  | "callTo"
  | "encryptedCallData"
  | "sendingChainTxManagerAddress"
  | "receivingChainTxManagerAddress";

/**
 * Why a sending-side prepare is refused. Each check has its own code. Original error classes
 * (docs/protocol.md#receiving-prepare) in brackets, for the ones that have one:
 * - not cancellable: `sender-not-prepared`, `not-sending-side`, `not-our-transfer`;
 * - cancellable: `params-invalid` [ParamsInvalid], `bid-undecodable`, `bid-signature-malformed` and
 *   `bid-signer-mismatch` [AuctionSignerInvalid], `<field>-mismatch` and `amount-outside-tolerance`
 *   [SenderChainDataInvalid], `pair-not-in-swap-pool`, `bid-expired` [BidExpiryInvalid],
 *   `receiver-expiry-invalid` [ExpiryInvalid], `receiver-amount-zero` [NotEnoughAmount].
 */
export type VerifyFailure =
  | "sender-not-prepared"
  | "not-sending-side"
  | "not-our-transfer"
  | "params-invalid"
  | "bid-undecodable"
  | "bid-signature-malformed"
  | "bid-signer-mismatch"
  | `${BidCheckedField}-mismatch`
  | "pair-not-in-swap-pool"
  | "bid-expired"
  | "amount-outside-tolerance"
  | "receiver-expiry-invalid"
  | "receiver-amount-zero";

export interface VerifySenderPrepareParams {
  /** The sending-side record, as observed on the sending chain. */
  sender: TransferRecord;
  /**
   * The router signer's address: bids must recover to it (also in router-contract mode,
   * docs/protocol.md#bid-signature).
   */
  routerSignerAddress: string;
  /** The router address (`invariant.router`): the Router contract if configured, else the signer. */
  routerAddress: string;
  /** Our configured TransactionManager on the receiving chain. */
  receivingTxManagerAddress: string;
  /** The TransactionManager the sender record was read from. */
  sendingTxManagerAddress: string;
  swapPools: readonly SwapPoolLike[];
  nowSec: number;
  tolerancePercent: number;
}

export interface VerifySenderPrepareOk {
  ok: true;
  bid: AuctionBid;
  /** What to prepare on the receiving chain (`receiverAmountFor`). Liquidity is the caller's check. */
  receiverAmount: bigint;
  receiverExpiry: number;
  invariant: InvariantTransactionData;
}

export interface VerifySenderPrepareRefused {
  ok: false;
  reason: VerifyFailure;
  /**
   * The router should cancel the sending side so the user's funds are not locked until expiry. The cancel
   * itself still goes through the sender-cancel rules (docs/protocol.md#cancel-rules, `checkSenderCancel` in
   * decide.ts).
   */
  cancellable: boolean;
  detail: string;
}

export type VerifySenderPrepareResult = VerifySenderPrepareOk | VerifySenderPrepareRefused;

/**
 * Everything the receiving-side prepare must establish from the sending side before the router locks
 * liquidity (docs/protocol.md#receiving-prepare steps 2–8, with its deviations). Pure: the sanitation check (step 1)
 * and liquidity (step 9) need chain reads and stay with the caller.
 *
 * Ownership: a transfer is ours when `invariant.router` is our router address, because only that address
 * can fulfill it and cancel it before expiry. A transfer naming another router is refused as
 * `not-our-transfer` and is not cancellable: we have no claim and the contract would refuse our cancel.
 * A transfer naming us whose bid was signed by another key, or whose bid names another router, is ours but
 * not our bid: cancellable, so the user is refunded now rather than at expiry.
 *
 * Bid expiry (docs/protocol.md#deviation-bid-expiry): `bidExpiry` is compared with the sending prepare's block
 * timestamp when the record has it, because what matters is that the bid was valid when the user committed funds; the
 * receiving prepare legitimately happens later (confirmations, retries). Without a timestamp it is compared
 * with `nowSec`, which can only refuse a late honest transfer (refunded by the cancel), never accept a
 * stale bid.
 */
export function verifySenderPrepare(params: VerifySenderPrepareParams): VerifySenderPrepareResult {
  const { sender, nowSec } = params;
  const txData = sender.txData;
  const ours: OurAddresses = {
    router: abiAddress(params.routerAddress, "routerAddress"),
    signer: abiAddress(params.routerSignerAddress, "routerSignerAddress"),
    receivingTxManager: abiAddress(params.receivingTxManagerAddress, "receivingTxManagerAddress"),
    sendingTxManager: abiAddress(params.sendingTxManagerAddress, "sendingTxManagerAddress"),
  };

  const refusedRecord = checkRecord(sender, ours);
  if (refusedRecord !== null) {
    return refusedRecord;
  }
  const decoded = decodeOurBid(sender, ours);
  if (!("bid" in decoded)) {
    return decoded;
  }
  const bid = decoded.bid;
  const refusedFields = compareBidFields(bid, sender, ours);
  if (refusedFields !== null) {
    return refusedFields;
  }

  const sending = { chainId: bid.sendingChainId, assetId: bid.sendingAssetId };
  const receiving = { chainId: bid.receivingChainId, assetId: bid.receivingAssetId };
  if (!isSwapSupported(params.swapPools, sending, receiving)) {
    return refuse("pair-not-in-swap-pool", true, "sending and receiving assets are not in one swap pool");
  }

  const bidCheckedAtSec = sender.preparedTimestamp ?? nowSec;
  if (isBidExpired({ bidExpiry: bid.bidExpiry, nowSec: bidCheckedAtSec })) {
    const at = sender.preparedTimestamp === undefined ? "now" : "the sending prepare";
    return refuse("bid-expired", true, `bidExpiry ${bid.bidExpiry} is not after ${at} (${bidCheckedAtSec})`);
  }

  const lockedAmount = BigInt(txData.amount);
  const receiverAmount = receiverAmountFor({ bid, lockedAmount, tolerancePercent: params.tolerancePercent });
  if (receiverAmount === null) {
    return refuse(
      "amount-outside-tolerance",
      true,
      `locked ${txData.amount} is outside ${params.tolerancePercent}% of bid amount ${bid.amount}`,
    );
  }

  const receiverExpiry = receiverExpiryFor(txData.expiry);
  if (!isReceiverExpiryValid({ receiverExpiry, nowSec })) {
    return refuse("receiver-expiry-invalid", true, `receiver expiry ${receiverExpiry} is outside (now+1d, now+7d)`);
  }
  if (receiverAmount <= 0n) {
    return refuse("receiver-amount-zero", true, "the receiving amount is zero");
  }

  return { ok: true, bid, receiverAmount, receiverExpiry, invariant: invariantOf(txData) };
}

/** Our addresses, lowercase. */
interface OurAddresses {
  router: string;
  signer: string;
  receivingTxManager: string;
  sendingTxManager: string;
}

/** The record is a live sending side of a transfer naming us, with well-formed data. */
function checkRecord(sender: TransferRecord, ours: OurAddresses): VerifySenderPrepareRefused | null {
  const txData = sender.txData;
  if (sender.status !== "Prepared") {
    return refuse("sender-not-prepared", false, `sender status is ${sender.status}`);
  }
  if (sender.chainId !== txData.sendingChainId) {
    return refuse("not-sending-side", false, `record on chain ${sender.chainId} is not the sending side`);
  }
  if (!sameHex(txData.router, ours.router)) {
    return refuse("not-our-transfer", false, `invariant router ${txData.router} is not ours`);
  }
  const problem = txDataProblem(txData) ?? (isHexBytes(sender.encryptedCallData) ? null : "encryptedCallData");
  return problem === null ? null : refuse("params-invalid", true, `sending-side ${problem} is malformed`);
}

/** The bid decodes and was signed by our signer (the encoding as stored on chain is what was signed). */
function decodeOurBid(sender: TransferRecord, ours: OurAddresses): { bid: AuctionBid } | VerifySenderPrepareRefused {
  let bid: AuctionBid;
  try {
    bid = decodeBid(sender.encodedBid);
  } catch {
    return refuse("bid-undecodable", true, "encodedBid is not an ABI-encoded AuctionBid");
  }
  let signer: string;
  try {
    signer = recoverBidSigner(sender.encodedBid, sender.bidSignature);
  } catch {
    return refuse("bid-signature-malformed", true, "bidSignature is not a valid signature");
  }
  if (!sameHex(signer, ours.signer)) {
    return refuse("bid-signer-mismatch", true, `bid signed by ${signer}, not by our signer`);
  }
  return { bid };
}

/** Weak point 1: every bid field equals the sending-side data and our configuration. */
function compareBidFields(
  bid: AuctionBid,
  sender: TransferRecord,
  ours: OurAddresses,
): VerifySenderPrepareRefused | null {
  const txData = sender.txData;
  const expected: Record<BidCheckedField, string | number> = {
    user: txData.user,
    router: ours.router,
    initiator: txData.initiator,
    sendingChainId: txData.sendingChainId,
    sendingAssetId: txData.sendingAssetId,
    receivingChainId: txData.receivingChainId,
    receivingAssetId: txData.receivingAssetId,
    receivingAddress: txData.receivingAddress,
    transactionId: txData.transactionId,
    expiry: txData.expiry,
    callDataHash: txData.callDataHash,
    callTo: txData.callTo,
    encryptedCallData: sender.encryptedCallData,
    sendingChainTxManagerAddress: ours.sendingTxManager,
    receivingChainTxManagerAddress: ours.receivingTxManager,
  };
  for (const field of Object.keys(expected) as BidCheckedField[]) {
    const want = expected[field];
    const got = bid[field];
    const equal = typeof want === "number" ? got === want : typeof got === "string" && sameHex(got, want);
    if (!equal) {
      return refuse(`${field}-mismatch`, true, `bid ${field} ${String(got)} differs from ${String(want)}`);
    }
  }
  // The sending chain checks the user's fulfill signature against the invariant's receiving TM: if it is
  // not the TM we prepare on, the signature the user gives there can never release the sending side.
  if (!sameHex(txData.receivingChainTxManagerAddress, ours.receivingTxManager)) {
    return refuse(
      "receivingChainTxManagerAddress-mismatch",
      true,
      `invariant receivingChainTxManagerAddress ${txData.receivingChainTxManagerAddress} is not ours`,
    );
  }
  return null;
}

function refuse(reason: VerifyFailure, cancellable: boolean, detail: string): VerifySenderPrepareRefused {
  return { ok: false, reason, cancellable, detail };
}

/** The first malformed field of the sending-side TransactionData, or null. */
function txDataProblem(txData: TransactionData): string | null {
  for (const field of TX_DATA_ADDRESS_FIELDS) {
    if (!isAddress(txData[field])) {
      return field;
    }
  }
  for (const field of ["callDataHash", "transactionId"] as const) {
    if (!isBytes32(txData[field])) {
      return field;
    }
  }
  for (const field of ["sendingChainId", "receivingChainId", "expiry", "preparedBlockNumber"] as const) {
    if (!Number.isSafeInteger(txData[field]) || txData[field] < 0) {
      return field;
    }
  }
  return /^[0-9]+$/.test(txData.amount) ? null : "amount";
}

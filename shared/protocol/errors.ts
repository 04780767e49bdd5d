import { RouterError, errorClass } from "../errors";

/**
 * A protocol function was handed a value it cannot encode or compare (a non-decimal amount, a malformed
 * address, a chain id that is not a safe integer). Not retriable: the same input fails the same way, and
 * for data built by the router itself it is a bug.
 */
export class ProtocolInputError extends errorClass(RouterError, "PROTOCOL_INPUT_INVALID", "terminal") {}

/**
 * `encodedBid` is not the ABI encoding of an AuctionBid (docs/protocol.md#bid-encoding): wrong layout, a number too
 * large for its JSON type, or a non-canonical encoding. Not retriable: the bytes are on chain and will not change.
 */
export class BidDecodeError extends errorClass(RouterError, "BID_DECODE_FAILED", "terminal") {}

/**
 * A transfer handed to an operation is not the one the router's records or the chain show: another chain or
 * router than the job's queue, or txData that differs field by field. Not retriable: the same data fails again.
 */
export class TransferMismatchError extends errorClass(RouterError, "TRANSFER_MISMATCH", "terminal") {}

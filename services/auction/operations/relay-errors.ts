import { RouterError } from "../../../shared/errors";

/**
 * Why a `metatx.request` is not relayed (docs/relaying.md). Each one is answered with an error reply whose
 * `type` is the class name (NxtpErrorJson), and logged once with its `code`. Not retriable means the same
 * request will be refused again; retriable ones may pass later (a cold cache, a busy queue).
 */

/** The payload is not a MetaTxPayload (schema), or a Fulfill that cannot succeed (wrong chain, call data hash). */
export class InvalidMetaTxPayloadError extends RouterError {
  readonly code = "INVALID_METATX_PAYLOAD";
  readonly retriable = false;
}

/** Only "Fulfill" is relayed; RouterContract* (another router's Router.sol calls) and unknown types are not. */
export class InvalidMetaTxTypeError extends RouterError {
  readonly code = "INVALID_METATX_TYPE";
  readonly retriable = false;
}

/** The chain is not in this router's chainConfig. */
export class RelayChainNotConfiguredError extends RouterError {
  readonly code = "RELAY_CHAIN_NOT_CONFIGURED";
  readonly retriable = false;
}

/** `chainConfig[chainId].allowRelay` is false (the default). */
export class NotAllowedFulfillRelayError extends RouterError {
  readonly code = "NOT_ALLOWED_FULFILL_RELAY";
  readonly retriable = false;
}

/** diagnosticMode: the router sends nothing on a requester's behalf. */
export class RelayDisabledError extends RouterError {
  readonly code = "RELAY_DISABLED";
  readonly retriable = false;
}

/** The fulfill signature does not recover to `txData.user` (the contract would revert #F:022). */
export class InvalidFulfillSignatureError extends RouterError {
  readonly code = "INVALID_FULFILL_SIGNATURE";
  readonly retriable = false;
}

/**
 * No receiving-side record of this transfer in the transfer store, and no prepare of this router for it in
 * its own records (decision, prepare-receiver job): this router does not carry it.
 */
export class UnknownTransferError extends RouterError {
  readonly code = "UNKNOWN_TRANSFER";
  readonly retriable = true;
}

/**
 * The router's own records say it prepares this receiving side (decision "prepare", its prepare-receiver job or
 * transaction), but neither its poller's record nor the chain shows the prepare yet. Retried by the router
 * itself for a bounded time (docs/relaying.md); this is the answer only once that time is over.
 */
export class ReceiverPrepareNotVisibleError extends RouterError {
  readonly code = "RECEIVER_PREPARE_NOT_VISIBLE";
  readonly retriable = true;
}

/** The receiving chain could not be read (every provider failed) while checking a side the poller has not stored yet. */
export class RelayChainUnavailableError extends RouterError {
  readonly code = "RELAY_CHAIN_UNAVAILABLE";
  readonly retriable = true;
}

/** The receiving side is recorded, but fulfilled or cancelled already. */
export class TransferNotPreparedError extends RouterError {
  readonly code = "TRANSFER_NOT_PREPARED";
  readonly retriable = false;
}

/** The receiving side is past its expiry by the receiving chain's clock: the contract refuses the fulfill. */
export class TransferExpiredError extends RouterError {
  readonly code = "TRANSFER_EXPIRED";
  readonly retriable = false;
}

/** A call to `callTo` with call data and no `callDataGas`: pricing it would need an RPC estimate on the request path. */
export class CallDataGasRequiredError extends RouterError {
  readonly code = "CALL_DATA_GAS_REQUIRED";
  readonly retriable = false;
}

/** The fee estimate's inputs (gas price, asset price, decimals) are not cached yet or too old. */
export class RelayerFeeUnavailableError extends RouterError {
  readonly code = "RELAYER_FEE_UNAVAILABLE";
  readonly retriable = true;
}

/**
 * The relayer fee cannot be priced on this chain (no oracle for the asset's or the native token's price source),
 * so it pays for nothing, and `chainConfig.<chainId>.allowUnpricedRelay` is off (the default).
 */
export class RelayUnpricedError extends RouterError {
  readonly code = "RELAY_UNPRICED";
  readonly retriable = false;
}

/** The offered relayer fee is below the router's estimate minus the chain's relayerFeeThreshold. */
export class NotEnoughRelayerFeeError extends RouterError {
  readonly code = "NOT_ENOUGH_RELAYER_FEE";
  readonly retriable = false;
}

/** Redis (transfer store or queue) did not answer in time; nothing was enqueued, or it is unknown whether. */
export class RelayQueueUnavailableError extends RouterError {
  readonly code = "RELAY_QUEUE_UNAVAILABLE";
  readonly retriable = true;
}

/** The relay job was not broadcast within the wait; it stays queued and a repeated request waits on it again. */
export class RelayBroadcastTimeoutError extends RouterError {
  readonly code = "RELAY_BROADCAST_TIMEOUT";
  readonly retriable = true;
}

/** The submitter gave up on the relay job (e.g. the estimate reverted), or found nothing to send. */
export class RelayFailedError extends RouterError {
  readonly code = "RELAY_FAILED";
  readonly retriable = false;
}

/** The auction is handling its bound of relay requests already (start-auction.ts); nothing was checked or enqueued. */
export class RelayBusyError extends RouterError {
  readonly code = "RELAY_BUSY";
  readonly retriable = true;
}

import { RouterError, errorClass } from "../../../shared/errors";

/**
 * Why a `metatx.request` is not relayed (docs/relaying.md). Each one is answered with an error reply whose
 * `type` is the class name (NxtpErrorJson), and logged once with its `code`. Not retriable means the same
 * request will be refused again; retriable ones may pass later (a cold cache, a busy queue).
 */

/** The payload is not a MetaTxPayload (schema), or a Fulfill that cannot succeed (wrong chain, call data hash). */
export class InvalidMetaTxPayloadError extends errorClass(RouterError, "INVALID_METATX_PAYLOAD", "terminal") {}

/** Only "Fulfill" is relayed; RouterContract* (another router's Router.sol calls) and unknown types are not. */
export class InvalidMetaTxTypeError extends errorClass(RouterError, "INVALID_METATX_TYPE", "terminal") {}

/** The chain is not in this router's chainConfig. */
export class RelayChainNotConfiguredError extends errorClass(RouterError, "RELAY_CHAIN_NOT_CONFIGURED", "terminal") {}

/** `chainConfig[chainId].allowRelay` is false (the default). */
export class NotAllowedFulfillRelayError extends errorClass(RouterError, "NOT_ALLOWED_FULFILL_RELAY", "terminal") {}

/** diagnosticMode: the router sends nothing on a requester's behalf. */
export class RelayDisabledError extends errorClass(RouterError, "RELAY_DISABLED", "terminal") {}

/** The fulfill signature does not recover to `txData.user` (the contract would revert #F:022). */
export class InvalidFulfillSignatureError extends errorClass(RouterError, "INVALID_FULFILL_SIGNATURE", "terminal") {}

/**
 * No receiving-side record of this transfer in the transfer store, and no prepare of this router for it in
 * its own records (decision, prepare-receiver job): this router does not carry it.
 */
export class UnknownTransferError extends errorClass(RouterError, "UNKNOWN_TRANSFER", "retriable") {}

/**
 * The router's own records say it prepares this receiving side (decision "prepare", its prepare-receiver job or
 * transaction), but neither its poller's record nor the chain shows the prepare yet. Retried by the router
 * itself for a bounded time (docs/relaying.md); this is the answer only once that time is over.
 */
export class ReceiverPrepareNotVisibleError extends errorClass(
  RouterError,
  "RECEIVER_PREPARE_NOT_VISIBLE",
  "retriable",
) {}

/** The receiving chain could not be read (every provider failed) while checking a side the poller has not stored yet. */
export class RelayChainUnavailableError extends errorClass(RouterError, "RELAY_CHAIN_UNAVAILABLE", "retriable") {}

/** The receiving side is recorded, but fulfilled or cancelled already. */
export class TransferNotPreparedError extends errorClass(RouterError, "TRANSFER_NOT_PREPARED", "terminal") {}

/** The receiving side is past its expiry by the receiving chain's clock: the contract refuses the fulfill. */
export class TransferExpiredError extends errorClass(RouterError, "TRANSFER_EXPIRED", "terminal") {}

/** A call to `callTo` with call data and no `callDataGas`: pricing it would need an RPC estimate on the request path. */
export class CallDataGasRequiredError extends errorClass(RouterError, "CALL_DATA_GAS_REQUIRED", "terminal") {}

/** The fee estimate's inputs (gas price, asset price, decimals) are not cached yet or too old. */
export class RelayerFeeUnavailableError extends errorClass(RouterError, "RELAYER_FEE_UNAVAILABLE", "retriable") {}

/**
 * The relayer fee cannot be priced on this chain (no oracle for the asset's or the native token's price source),
 * so it pays for nothing, and `chainConfig.<chainId>.allowUnpricedRelay` is off (the default).
 */
export class RelayUnpricedError extends errorClass(RouterError, "RELAY_UNPRICED", "terminal") {}

/** The offered relayer fee is below the router's estimate minus the chain's relayerFeeThreshold. */
export class NotEnoughRelayerFeeError extends errorClass(RouterError, "NOT_ENOUGH_RELAYER_FEE", "terminal") {}

/** Redis (transfer store or queue) did not answer in time; nothing was enqueued, or it is unknown whether. */
export class RelayQueueUnavailableError extends errorClass(RouterError, "RELAY_QUEUE_UNAVAILABLE", "retriable") {}

/** The relay job was not broadcast within the wait; it stays queued and a repeated request waits on it again. */
export class RelayBroadcastTimeoutError extends errorClass(RouterError, "RELAY_BROADCAST_TIMEOUT", "retriable") {}

/** The submitter gave up on the relay job (e.g. the estimate reverted), or found nothing to send. */
export class RelayFailedError extends errorClass(RouterError, "RELAY_FAILED", "terminal") {}

/** The auction is handling its bound of relay requests already (start-auction.ts); nothing was checked or enqueued. */
export class RelayBusyError extends errorClass(RouterError, "RELAY_BUSY", "retriable") {}

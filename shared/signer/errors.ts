import { RouterError, errorClass } from "../errors";

/**
 * The signer key source is unusable as configured (bad mnemonic, bad URL, both or neither set).
 * Not retriable: the same config fails the same way until an operator changes it.
 * Messages never echo the secret that failed to parse.
 */
export class SignerConfigError extends errorClass(RouterError, "SIGNER_CONFIG_INVALID", "terminal") {}

/**
 * The caller handed over a transaction that cannot be signed as is (e.g. type 2 without fee caps).
 * Not retriable: it is a bug in the builder, and signing a half-populated tx would put a wrong one on chain.
 */
export class UnsignedTransactionInvalidError extends errorClass(RouterError, "SIGNER_TX_INVALID", "terminal") {}

/**
 * The remote signer could not be reached or answered with a server error (network error, timeout, 5xx).
 * Retriable: these conditions clear on their own (restart, deploy, network blip).
 */
export class RemoteSignerUnavailableError extends errorClass(RouterError, "REMOTE_SIGNER_UNAVAILABLE", "retriable") {}

/**
 * The remote signer answered, but with something we must not use (empty body, no keys, malformed
 * signature, a signature from a different key, a 4xx). Not retriable: it points at a misconfigured
 * key store or URL, and retrying would only repeat it.
 */
export class RemoteSignerBadResponseError extends errorClass(RouterError, "REMOTE_SIGNER_BAD_RESPONSE", "terminal") {}

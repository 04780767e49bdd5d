import Joi from "joi";
import type { TransactionData } from "./types";

/**
 * Joi pieces for NXTP values in JSON, defined once: the queue contract (shared/queues/jobs.ts) and the
 * meta-transaction payload (metatx-request.ts) validate the same TransactionData. Bounds are the ABI's: a
 * uint256 has at most 78 decimal digits, chain ids and times fit a safe integer.
 */
export const ADDRESS_SCHEMA = Joi.string().pattern(/^0x[0-9a-fA-F]{40}$/);
export const UINT256_DECIMAL_SCHEMA = Joi.string().pattern(/^[0-9]{1,78}$/);
export const CHAIN_ID_SCHEMA = Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER);
export const BYTES32_SCHEMA = Joi.string().pattern(/^0x[0-9a-fA-F]{64}$/);
export const HEX_BYTES_SCHEMA = Joi.string().pattern(/^0x([0-9a-fA-F]{2})*$/);
export const UNIX_SECONDS_SCHEMA = Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER);

/**
 * TransactionData (docs/protocol.md#structs) as JSON: every field required; unknown fields refused unless the caller
 * allows them.
 */
export const TRANSACTION_DATA_SCHEMA = Joi.object<TransactionData>({
  receivingChainTxManagerAddress: ADDRESS_SCHEMA.required(),
  user: ADDRESS_SCHEMA.required(),
  router: ADDRESS_SCHEMA.required(),
  initiator: ADDRESS_SCHEMA.required(),
  sendingAssetId: ADDRESS_SCHEMA.required(),
  receivingAssetId: ADDRESS_SCHEMA.required(),
  sendingChainFallback: ADDRESS_SCHEMA.required(),
  callTo: ADDRESS_SCHEMA.required(),
  receivingAddress: ADDRESS_SCHEMA.required(),
  sendingChainId: CHAIN_ID_SCHEMA.required(),
  receivingChainId: CHAIN_ID_SCHEMA.required(),
  callDataHash: BYTES32_SCHEMA.required(),
  transactionId: BYTES32_SCHEMA.required(),
  amount: UINT256_DECIMAL_SCHEMA.required(),
  expiry: UNIX_SECONDS_SCHEMA.required(),
  preparedBlockNumber: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
});

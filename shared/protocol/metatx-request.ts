import { keccak256 } from "ethers";
import Joi from "joi";
import { TX_DATA_ADDRESS_FIELDS, type TransactionData } from "./types";
import { sameHex } from "./values";
import {
  ADDRESS_SCHEMA,
  CHAIN_ID_SCHEMA,
  HEX_BYTES_SCHEMA,
  TRANSACTION_DATA_SCHEMA,
  UINT256_DECIMAL_SCHEMA,
} from "./transaction-data-schema";

/**
 * `data` of a `metatx.request` (docs/protocol.md#metatx-request), validated. Only the "Fulfill" type is relayed:
 * the user's own receiving-side fulfill, signed by the user. The RouterContract* types (another router's
 * Router.sol calls) are refused as an invalid type, like unknown types. Extra keys are allowed and ignored
 * (the SDK adds a redundant top-level `relayerFee`; `to` is validated but ignored: the fulfill always goes to
 * the TransactionManager of the router's own config).
 */
export const META_TX_TYPES = [
  "Fulfill",
  "RouterContractPrepare",
  "RouterContractFulfill",
  "RouterContractCancel",
  "RouterContractRemoveLiquidity",
] as const;

export interface FulfillMetaTx {
  readonly type: "Fulfill";
  readonly to: string;
  /** The chain the fulfill is sent on: the transfer's receiving chain. */
  readonly chainId: number;
  /** The receiving side's TransactionData (with its own amount, expiry and preparedBlockNumber). */
  readonly txData: TransactionData;
  /** Decimal integer string, receiving-asset units. */
  readonly relayerFee: string;
  /** The user's fulfill signature (docs/protocol.md#user-signatures). */
  readonly signature: string;
  readonly callData: string;
  /** Gas the call to `callTo` needs, as declared by the requester (decimal string); optional. */
  readonly callDataGas?: string;
}

export type MetaTxRefusal = "invalid-payload" | "invalid-type";

export type MetaTxValidation =
  | { readonly ok: true; readonly request: FulfillMetaTx }
  | {
      readonly ok: false;
      readonly reason: MetaTxRefusal;
      readonly message: string;
      /** Present when the payload got far enough to name it, for logs. */
      readonly transactionId?: string;
    };

const address = ADDRESS_SCHEMA;
const decimal = UINT256_DECIMAL_SCHEMA;
const chainId = CHAIN_ID_SCHEMA;
/** Call data is bounded: it is relayed in one transaction, and a request body is bounded anyway. */
const hexBytes = HEX_BYTES_SCHEMA.max(2 + 2 * 128 * 1024);

const envelopeSchema = Joi.object({
  type: Joi.string().max(64).required(),
  to: address.required(),
  chainId: chainId.required(),
  data: Joi.object().required(),
}).unknown(true);

const txDataSchema = TRANSACTION_DATA_SCHEMA.unknown(true);

const fulfillDataSchema = Joi.object({
  txData: txDataSchema.required(),
  relayerFee: decimal.required(),
  signature: hexBytes.required(),
  callData: hexBytes.required(),
  callDataGas: decimal,
}).unknown(true);

/** Pure: the request data → a FulfillMetaTx, or the reason it is refused. Never throws. */
export function validateMetaTxRequest(data: unknown): MetaTxValidation {
  const envelope = envelopeSchema.validate(data, { abortEarly: false, convert: false });
  if (envelope.error) {
    return { ok: false, reason: "invalid-payload", message: problems(envelope.error) };
  }
  const payload = data as { type: string; to: string; chainId: number; data: Record<string, unknown> };
  const transactionId = transactionIdOf(payload.data);
  if (payload.type !== "Fulfill") {
    const known = (META_TX_TYPES as readonly string[]).includes(payload.type);
    return {
      ok: false,
      reason: "invalid-type",
      message: known
        ? `meta-transaction type ${payload.type} is not relayed by this router (only Fulfill)`
        : `unknown meta-transaction type ${JSON.stringify(payload.type)}`,
      transactionId,
    };
  }
  const fulfill = fulfillDataSchema.validate(payload.data, { abortEarly: false, convert: false });
  if (fulfill.error) {
    return { ok: false, reason: "invalid-payload", message: problems(fulfill.error, "data."), transactionId };
  }
  const d = payload.data as unknown as Omit<FulfillMetaTx, "type" | "to" | "chainId">;
  const txData = pickTransactionData(d.txData);
  if (txData.receivingChainId !== payload.chainId) {
    return {
      ok: false,
      reason: "invalid-payload",
      message: `a fulfill is relayed on the receiving chain ${txData.receivingChainId}, not on chain ${payload.chainId}`,
      transactionId,
    };
  }
  // The contract reverts on both (#F:024, #F:023); refusing here costs no gas.
  if (BigInt(d.relayerFee) > BigInt(txData.amount)) {
    return { ok: false, reason: "invalid-payload", message: "relayerFee exceeds the transfer's amount", transactionId };
  }
  if (keccak256(d.callData) !== txData.callDataHash.toLowerCase()) {
    return {
      ok: false,
      reason: "invalid-payload",
      message: "keccak256(callData) does not match txData.callDataHash",
      transactionId,
    };
  }
  return {
    ok: true,
    request: {
      type: "Fulfill",
      to: payload.to,
      chainId: payload.chainId,
      txData,
      relayerFee: d.relayerFee,
      signature: d.signature,
      callData: d.callData,
      ...(d.callDataGas === undefined ? {} : { callDataGas: d.callDataGas }),
    },
  };
}

const TX_DATA_FIELDS = [
  ...TX_DATA_ADDRESS_FIELDS,
  "sendingChainId",
  "receivingChainId",
  "callDataHash",
  "transactionId",
  "amount",
  "expiry",
  "preparedBlockNumber",
] as const satisfies ReadonlyArray<keyof TransactionData>;

/**
 * Fields of `offered` that differ from `stored` (empty when they name the same prepared side): hex values
 * compare case-insensitively, amounts as integers, numbers exactly.
 */
export function transactionDataMismatches(stored: TransactionData, offered: TransactionData): string[] {
  return TX_DATA_FIELDS.filter((field) => !sameValue(stored[field], offered[field]));
}

function sameValue(a: string | number, b: string | number): boolean {
  if (typeof a === "number" || typeof b === "number") {
    return a === b;
  }
  if (/^[0-9]+$/.test(a) && /^[0-9]+$/.test(b)) {
    return BigInt(a) === BigInt(b);
  }
  return sameHex(a, b);
}

/** Only the known fields, so extra keys of the request never travel into job data. */
function pickTransactionData(raw: TransactionData): TransactionData {
  return Object.fromEntries(TX_DATA_FIELDS.map((field) => [field, raw[field]])) as unknown as TransactionData;
}

function transactionIdOf(data: Record<string, unknown>): string | undefined {
  const txData = data.txData as { transactionId?: unknown } | undefined;
  const params = data.params as { txData?: { transactionId?: unknown } } | undefined;
  const id = txData?.transactionId ?? params?.txData?.transactionId;
  return typeof id === "string" && /^0x[0-9a-fA-F]{64}$/.test(id) ? id : undefined;
}

function problems(error: Joi.ValidationError, prefix = ""): string {
  return error.details
    .slice(0, 5)
    .map((d) => `${prefix}${d.path.join(".") || "(data)"}: ${truncate(d.message)}`)
    .join("; ");
}

/** Joi quotes the offending value; a request's call data must not turn into a huge log line or reply. */
function truncate(text: string, maxChars = 200): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}…`;
}

import Joi from "joi";
import { ZeroAddress, getAddress } from "ethers";
import { formatPath } from "../../shared/config";
import { AdminApiError } from "./errors";
import type {
  AddLiquidityForRequest,
  CancelSenderRequest,
  MigrateLiquidityRequest,
  RemoveLiquidityRequest,
} from "./types";

const MAX_UINT256 = 2n ** 256n - 1n;

/**
 * Our own wording per Joi error type. Joi's defaults echo values (`string.pattern.base` quotes the input),
 * and a body may carry a secret pasted into the wrong field, so no message here contains a value.
 */
const PROBLEMS: Readonly<Record<string, string>> = {
  "any.required": "is required",
  "object.unknown": "is not an accepted field",
  "boolean.base": "must be true or false",
  "chainId.invalid": "must be a positive integer or a string of decimal digits",
  "address.invalid": "must be an address (0x and 40 hex digits; a mixed-case address must have a valid checksum)",
  "address.zero": "must not be the zero address",
  "amount.type": "must be a string of decimal digits (base units)",
  "amount.format": "must be a string of decimal digits (base units)",
  "amount.fraction": "must be a whole number of base units; fractions are refused",
  "amount.zero": "must be greater than zero",
  "amount.range": "must fit in 256 bits",
  "transactionId.invalid": "must be 0x followed by 64 hex digits",
  "array.base": "must be an array of addresses",
  "array.min": "must name at least one asset",
  "array.max": "must name at most 50 assets",
  "array.unique": "must not name an asset twice",
};

/** Problems that make a request an `invalid_amount` rather than an `invalid_body` (docs/admin-api.md). */
const AMOUNT_VALUE_PROBLEMS = new Set([
  "amount.type",
  "amount.format",
  "amount.fraction",
  "amount.zero",
  "amount.range",
]);

const chainIdField = (): Joi.AnySchema =>
  Joi.any().custom((value: unknown, helpers) => {
    const parsed = typeof value === "string" && /^[0-9]+$/.test(value) ? Number(value) : value;
    return typeof parsed === "number" && Number.isSafeInteger(parsed) && parsed >= 1
      ? parsed
      : helpers.error("chainId.invalid");
  });

const addressField = (options: { allowZero: boolean }): Joi.AnySchema =>
  Joi.any().custom((value: unknown, helpers) => {
    if (typeof value !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(value)) {
      return helpers.error("address.invalid");
    }
    let checksummed: string;
    try {
      checksummed = getAddress(value);
    } catch {
      return helpers.error("address.invalid");
    }
    return !options.allowZero && checksummed === ZeroAddress ? helpers.error("address.zero") : checksummed;
  });

const amountField = (): Joi.AnySchema =>
  Joi.any().custom((value: unknown, helpers) => {
    if (typeof value !== "string") {
      return helpers.error("amount.type");
    }
    if (/^[0-9]*\.[0-9]*$/.test(value) && value !== ".") {
      return helpers.error("amount.fraction");
    }
    if (!/^[0-9]+$/.test(value)) {
      return helpers.error("amount.format");
    }
    const amount = BigInt(value);
    if (amount === 0n) {
      return helpers.error("amount.zero");
    }
    return amount > MAX_UINT256 ? helpers.error("amount.range") : amount.toString();
  });

const transactionIdField = (): Joi.AnySchema =>
  Joi.any().custom((value: unknown, helpers) =>
    typeof value === "string" && /^0x[0-9a-fA-F]{64}$/.test(value)
      ? value.toLowerCase()
      : helpers.error("transactionId.invalid"),
  );

/** `adminToken` is listed only so it is not "unknown": it was checked before validation runs. */
const removeLiquiditySchema = Joi.object({
  adminToken: Joi.any(),
  chainId: chainIdField().required(),
  assetId: addressField({ allowZero: true }).required(),
  amount: amountField().required(),
  recipientAddress: addressField({ allowZero: false }).required(),
}).unknown(false);

const cancelSenderSchema = Joi.object({
  adminToken: Joi.any(),
  senderChainId: chainIdField().required(),
  transactionId: transactionIdField().required(),
  user: addressField({ allowZero: false }).required(),
  force: Joi.boolean().strict().default(false),
}).unknown(false);

const addLiquidityForSchema = Joi.object({
  adminToken: Joi.any(),
  chainId: chainIdField().required(),
  assetId: addressField({ allowZero: true }).required(),
  amount: amountField().required(),
  routerAddress: addressField({ allowZero: false }),
}).unknown(false);

const migrateLiquiditySchema = Joi.object({
  adminToken: Joi.any(),
  chainId: chainIdField().required(),
  newRouterAddress: addressField({ allowZero: false }).required(),
  // Compared after checksumming, so one asset in two spellings is still named twice.
  assets: Joi.array()
    .items(addressField({ allowZero: true }))
    .min(1)
    .max(50)
    .unique(),
}).unknown(false);

/** The route takes no field but the token; anything else is refused rather than silently ignored. */
const tokenOnlySchema = Joi.object({ adminToken: Joi.any() }).unknown(false);

export function decodeAddLiquidityFor(body: Record<string, unknown>): AddLiquidityForRequest {
  const value = validate<AddLiquidityForRequest & { adminToken?: unknown }>(addLiquidityForSchema, body);
  return {
    chainId: value.chainId,
    assetId: value.assetId,
    amount: value.amount,
    ...(value.routerAddress === undefined ? {} : { routerAddress: value.routerAddress }),
  };
}

export function decodeMigrateLiquidity(body: Record<string, unknown>): MigrateLiquidityRequest {
  const value = validate<MigrateLiquidityRequest & { adminToken?: unknown }>(migrateLiquiditySchema, body);
  return {
    chainId: value.chainId,
    newRouterAddress: value.newRouterAddress,
    ...(value.assets === undefined ? {} : { assets: value.assets }),
  };
}

export function decodeTokenOnly(body: Record<string, unknown>): void {
  validate<{ adminToken?: unknown }>(tokenOnlySchema, body);
}

export function decodeRemoveLiquidity(body: Record<string, unknown>): RemoveLiquidityRequest {
  const value = validate<RemoveLiquidityRequest & { adminToken?: unknown }>(removeLiquiditySchema, body);
  return {
    chainId: value.chainId,
    assetId: value.assetId,
    amount: value.amount,
    recipientAddress: value.recipientAddress,
  };
}

export function decodeCancelSender(body: Record<string, unknown>): CancelSenderRequest {
  const value = validate<CancelSenderRequest & { adminToken?: unknown }>(cancelSenderSchema, body);
  return {
    senderChainId: value.senderChainId,
    transactionId: value.transactionId,
    user: value.user,
    force: value.force,
  };
}

function validate<T>(schema: Joi.ObjectSchema, body: Record<string, unknown>): T {
  const { value, error } = schema.validate(body, { abortEarly: false, convert: true });
  if (!error) {
    return value as T;
  }
  // An unknown key's name comes from the body (it may be a secret pasted in the wrong place): counted, not named.
  const known = error.details.filter((d) => d.type !== "object.unknown");
  const unknown = error.details.length - known.length;
  const problems = known.map((d) => `${fieldPath(d)}: ${PROBLEMS[d.type] ?? "is invalid"}`);
  if (unknown > 0) {
    problems.push(
      `(body): ${unknown} field${unknown === 1 ? " is" : "s are"} not accepted; accepted: ${acceptedFields(schema)}`,
    );
  }
  const amountOnly = unknown === 0 && known.every((d) => AMOUNT_VALUE_PROBLEMS.has(d.type));
  throw new AdminApiError(amountOnly ? "INVALID_AMOUNT" : "INVALID_BODY", problems.join("; "), {
    fields: known.map(fieldPath),
  });
}

function acceptedFields(schema: Joi.ObjectSchema): string {
  const keys = (schema.describe().keys ?? {}) as Record<string, unknown>;
  return Object.keys(keys).join(", ");
}

function fieldPath(detail: Joi.ValidationErrorItem): string {
  return formatPath(detail.path);
}

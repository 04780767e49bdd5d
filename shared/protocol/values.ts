import { ProtocolInputError } from "./errors";

/**
 * Strict parsing and comparison of wire values. The wire carries amounts as decimal strings, chain ids and
 * timestamps as JSON numbers, and addresses in whatever case the client sent (docs/protocol.md#payloads). ethers would
 * accept hex strings and exponent-free floats as uint256 and refuse a mixed-case address with a bad checksum, so
 * every value is normalised here before it reaches the ABI coder.
 */

const DECIMAL = /^[0-9]+$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const HEX = /^0x([0-9a-fA-F]{2})*$/;
const UINT256_MAX = (1n << 256n) - 1n;

/** A uint256 as bigint, from a bigint, a safe non-negative integer number, or a decimal string. */
export function parseUint(value: bigint | number | string, field: string): bigint {
  let parsed: bigint;
  if (typeof value === "bigint") {
    parsed = value;
  } else if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) {
      throw new ProtocolInputError(`${field} must be a safe integer`, { field });
    }
    parsed = BigInt(value);
  } else {
    if (!DECIMAL.test(value)) {
      throw new ProtocolInputError(`${field} must be a decimal integer string`, { field });
    }
    parsed = BigInt(value);
  }
  if (parsed < 0n || parsed > UINT256_MAX) {
    throw new ProtocolInputError(`${field} is outside the uint256 range`, { field });
  }
  return parsed;
}

/** A uint256 that must fit a JSON number (chain ids, unix seconds, block numbers). */
export function toSafeNumber(value: bigint, field: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ProtocolInputError(`${field} does not fit a JSON number`, { field });
  }
  return Number(value);
}

/** Lowercase form for the ABI coder: case carries no meaning on chain and a bad checksum must not throw. */
export function abiAddress(value: string, field: string): string {
  if (!ADDRESS.test(value)) {
    throw new ProtocolInputError(`${field} must be a 20-byte hex address`, { field });
  }
  return value.toLowerCase();
}

export function abiBytes32(value: string, field: string): string {
  if (!BYTES32.test(value)) {
    throw new ProtocolInputError(`${field} must be 32 bytes of hex`, { field });
  }
  return value.toLowerCase();
}

export function abiBytes(value: string, field: string): string {
  if (!HEX.test(value)) {
    throw new ProtocolInputError(`${field} must be 0x-prefixed hex of whole bytes`, { field });
  }
  return value.toLowerCase();
}

export function isAddress(value: string): boolean {
  return ADDRESS.test(value);
}

export function isBytes32(value: string): boolean {
  return BYTES32.test(value);
}

export function isHexBytes(value: string): boolean {
  return HEX.test(value);
}

/** Address or hex equality, case-insensitive. Values that are not hex never compare equal. */
export function sameHex(a: string, b: string): boolean {
  return HEX.test(a) && HEX.test(b) && a.toLowerCase() === b.toLowerCase();
}

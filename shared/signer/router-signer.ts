import { Transaction } from "ethers";
import { UnsignedTransactionInvalidError } from "./errors";

/**
 * A transaction the caller has fully populated. Signers never fetch nonces or gas: the submitter process
 * owns nonce and fee decisions, and a signer that filled gaps would race it.
 */
export interface UnsignedTransaction {
  type: 0 | 2;
  chainId: bigint | number;
  nonce: number;
  to: string;
  data: string;
  value: bigint;
  gasLimit: bigint;
  /** Required for type 0. */
  gasPrice?: bigint;
  /** Required for type 2. */
  maxFeePerGas?: bigint;
  /** Required for type 2. */
  maxPriorityFeePerGas?: bigint;
}

/** The router's one signing identity, backed by a local mnemonic or a remote web3signer. */
export interface RouterSigner {
  readonly kind: "mnemonic" | "remote";
  /** Checksummed address of the signing key. */
  getAddress(): Promise<string>;
  /** EIP-191 personal_sign; a string is signed as its UTF-8 bytes. 65 bytes r||s||v with v in {27, 28}. */
  signMessage(message: string | Uint8Array): Promise<string>;
  /** The serialized signed transaction (0x...), ready for eth_sendRawTransaction. */
  signTransaction(tx: UnsignedTransaction): Promise<string>;
}

const RAW_SIGNATURE = /^0x[0-9a-fA-F]{130}$/;

/**
 * docs/protocol.md#bid-signature: some signers return v as the recovery id (0/1) instead of 27/28; the SDK's ecrecover
 * expects 27/28, so a 0 or 1 in the last byte is rewritten. Any other v is left alone for the caller to verify.
 */
export function sanitizeSignatureV(sig: string): string {
  if (!RAW_SIGNATURE.test(sig)) {
    throw new TypeError("signature must be 65 bytes of 0x-prefixed hex");
  }
  const v = Number.parseInt(sig.slice(-2), 16);
  if (v === 0 || v === 1) {
    return sig.slice(0, -2) + (v + 27).toString(16);
  }
  return sig;
}

/**
 * Builds the ethers Transaction both signers sign, so their output is byte-identical. Fee fields of the
 * other type are dropped on purpose, and missing ones are refused: ethers would serialize a missing fee
 * as 0 and produce a transaction that never mines.
 */
export function toEthersTransaction(tx: UnsignedTransaction): Transaction {
  assertTxShape(tx);
  const common = {
    type: tx.type,
    chainId: BigInt(tx.chainId),
    nonce: tx.nonce,
    to: tx.to,
    data: tx.data,
    value: tx.value,
    gasLimit: tx.gasLimit,
  };
  try {
    return tx.type === 0
      ? Transaction.from({ ...common, gasPrice: tx.gasPrice })
      : Transaction.from({
          ...common,
          maxFeePerGas: tx.maxFeePerGas,
          maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
          accessList: [],
        });
  } catch (err) {
    // ethers rejects ENS names and malformed hex here; both are caller bugs, never network lookups.
    throw new UnsignedTransactionInvalidError("unsigned transaction has an invalid field", {}, { cause: err });
  }
}

function assertTxShape(tx: UnsignedTransaction): void {
  const fail = (reason: string): never => {
    throw new UnsignedTransactionInvalidError(`unsigned transaction is invalid: ${reason}`, {
      type: tx.type,
      chainId: String(tx.chainId),
      nonce: tx.nonce,
    });
  };
  if (tx.type !== 0 && tx.type !== 2) {
    fail("type must be 0 or 2");
  }
  if (!Number.isSafeInteger(tx.nonce) || tx.nonce < 0) {
    fail("nonce must be a non-negative integer");
  }
  if (BigInt(tx.chainId) <= 0n) {
    fail("chainId must be positive");
  }
  if (tx.type === 0 && tx.gasPrice === undefined) {
    fail("type 0 needs gasPrice");
  }
  if (tx.type === 2 && (tx.maxFeePerGas === undefined || tx.maxPriorityFeePerGas === undefined)) {
    fail("type 2 needs maxFeePerGas and maxPriorityFeePerGas");
  }
}

import { AbiCoder, getBytes, keccak256, verifyMessage } from "ethers";
import { RouterSigner, sanitizeSignatureV } from "../signer/router-signer";
import { abiAddress, abiBytes32, parseUint } from "./values";

/**
 * docs/protocol.md#user-signatures: the user's fulfill and cancel signatures. EIP-191 over
 * `keccak256(abi.encode(payload))`, no EIP-712. Both payloads are dynamic tuples (a `string` member), so the encoding
 * starts with an offset word. The router only recovers these; the signing helpers exist for tests and the test user.
 */
export const SIGNED_FULFILL_DATA_ABI_TYPE =
  "tuple(bytes32 transactionId, uint256 relayerFee, string functionIdentifier, uint256 receivingChainId, " +
  "address receivingChainTxManagerAddress)";

export const SIGNED_CANCEL_DATA_ABI_TYPE =
  "tuple(bytes32 transactionId, string functionIdentifier, uint256 receivingChainId, " +
  "address receivingChainTxManagerAddress)";

export interface FulfillPayload {
  transactionId: string;
  relayerFee: bigint | string;
  receivingChainId: number | bigint;
  receivingChainTxManagerAddress: string;
}

export interface CancelPayload {
  transactionId: string;
  receivingChainId: number | bigint;
  receivingChainTxManagerAddress: string;
}

const coder = AbiCoder.defaultAbiCoder();

export function fulfillPayloadHash(payload: FulfillPayload): string {
  const tuple = {
    transactionId: abiBytes32(payload.transactionId, "transactionId"),
    relayerFee: parseUint(payload.relayerFee, "relayerFee"),
    functionIdentifier: "fulfill",
    receivingChainId: parseUint(payload.receivingChainId, "receivingChainId"),
    receivingChainTxManagerAddress: abiAddress(
      payload.receivingChainTxManagerAddress,
      "receivingChainTxManagerAddress",
    ),
  };
  return keccak256(coder.encode([SIGNED_FULFILL_DATA_ABI_TYPE], [tuple]));
}

export function cancelPayloadHash(payload: CancelPayload): string {
  const tuple = {
    transactionId: abiBytes32(payload.transactionId, "transactionId"),
    functionIdentifier: "cancel",
    receivingChainId: parseUint(payload.receivingChainId, "receivingChainId"),
    receivingChainTxManagerAddress: abiAddress(
      payload.receivingChainTxManagerAddress,
      "receivingChainTxManagerAddress",
    ),
  };
  return keccak256(coder.encode([SIGNED_CANCEL_DATA_ABI_TYPE], [tuple]));
}

/** Checksummed signer of a fulfill signature; throws on a malformed signature. */
export function recoverFulfillSigner(payload: FulfillPayload, signature: string): string {
  return verifyMessage(getBytes(fulfillPayloadHash(payload)), signature);
}

/** Checksummed signer of a cancel signature; throws on a malformed signature. */
export function recoverCancelSigner(payload: CancelPayload, signature: string): string {
  return verifyMessage(getBytes(cancelPayloadHash(payload)), signature);
}

export async function signFulfill(signer: RouterSigner, payload: FulfillPayload): Promise<string> {
  return sanitizeSignatureV(await signer.signMessage(getBytes(fulfillPayloadHash(payload))));
}

export async function signCancel(signer: RouterSigner, payload: CancelPayload): Promise<string> {
  return sanitizeSignatureV(await signer.signMessage(getBytes(cancelPayloadHash(payload))));
}

export interface UserFulfillSignatureParams {
  readonly txData: Pick<FulfillPayload, "transactionId" | "receivingChainId" | "receivingChainTxManagerAddress"> & {
    readonly user: string;
  };
  readonly relayerFee: string;
  readonly signature: string;
}

export type UserFulfillSignatureCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: "malformed" }
  | { readonly ok: false; readonly reason: "wrong-signer"; readonly signer: string };

/**
 * Whether `signature` is `txData.user`'s fulfill signature for this relayer fee, as both chains check it
 * (docs/protocol.md#user-signatures: the transfer's receiving chain id and receiving TransactionManager). Pure; never
 * throws. The one check the sending-side claim and the relayed receiving-side fulfill share.
 */
export function checkUserFulfillSignature(params: UserFulfillSignatureParams): UserFulfillSignatureCheck {
  const { txData } = params;
  let signer: string;
  try {
    signer = recoverFulfillSigner(
      {
        transactionId: txData.transactionId,
        relayerFee: params.relayerFee,
        receivingChainId: txData.receivingChainId,
        receivingChainTxManagerAddress: txData.receivingChainTxManagerAddress,
      },
      params.signature,
    );
  } catch {
    return { ok: false, reason: "malformed" };
  }
  return signer.toLowerCase() === txData.user.toLowerCase()
    ? { ok: true }
    : { ok: false, reason: "wrong-signer", signer };
}

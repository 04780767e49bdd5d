import { AbiCoder, getBytes, keccak256, verifyMessage } from "ethers";
import type { RouterSigner } from "../signer/router-signer";
import { sanitizeSignatureV } from "../signer/router-signer";
import { abiAddress, parseUint } from "./values";

/**
 * §4.5: router-signer signatures that Router.sol checks when someone other than the router signer calls it.
 * EIP-191 over `keccak256(abi.encode(payload))`. removeLiquidity's payload is a static tuple, so its encoding
 * is the five words back to back with no offset word (Router.sol `SignedRemoveLiquidityData`).
 * `chainId` is the Router's stored chain id, i.e. the chain the call runs on.
 */
export const SIGNED_REMOVE_LIQUIDITY_DATA_ABI_TYPE =
  "tuple(uint256 amount, address assetId, address routerRelayerFeeAsset, uint256 routerRelayerFee, uint256 chainId)";

export interface RemoveLiquiditySignaturePayload {
  amount: bigint | string;
  /** The zero address is the native asset. */
  assetId: string;
  routerRelayerFeeAsset: string;
  routerRelayerFee: bigint | string;
  chainId: number | bigint;
}

const coder = AbiCoder.defaultAbiCoder();

export function encodeRemoveLiquidityPayload(payload: RemoveLiquiditySignaturePayload): string {
  const tuple = {
    amount: parseUint(payload.amount, "amount"),
    assetId: abiAddress(payload.assetId, "assetId"),
    routerRelayerFeeAsset: abiAddress(payload.routerRelayerFeeAsset, "routerRelayerFeeAsset"),
    routerRelayerFee: parseUint(payload.routerRelayerFee, "routerRelayerFee"),
    chainId: parseUint(payload.chainId, "chainId"),
  };
  return coder.encode([SIGNED_REMOVE_LIQUIDITY_DATA_ABI_TYPE], [tuple]);
}

export function removeLiquidityPayloadHash(payload: RemoveLiquiditySignaturePayload): string {
  return keccak256(encodeRemoveLiquidityPayload(payload));
}

/** Checksummed address that signed `signature` over the payload; throws on a malformed signature. */
export function recoverRemoveLiquiditySigner(payload: RemoveLiquiditySignaturePayload, signature: string): string {
  return verifyMessage(getBytes(removeLiquidityPayloadHash(payload)), signature);
}

/** Signs the 32-byte hash as bytes (not as its hex text), exactly as Router.sol's `toEthSignedMessageHash` expects. */
export async function signRemoveLiquidity(
  signer: Pick<RouterSigner, "signMessage">,
  payload: RemoveLiquiditySignaturePayload,
): Promise<string> {
  return sanitizeSignatureV(await signer.signMessage(getBytes(removeLiquidityPayloadHash(payload))));
}

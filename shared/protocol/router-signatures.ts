import { AbiCoder, getBytes, keccak256, verifyMessage } from "ethers";
import type { RouterSigner } from "../signer/router-signer";
import { sanitizeSignatureV } from "../signer/router-signer";
import { INVARIANT_TRANSACTION_DATA_ABI_TYPE } from "./digests";
import type { InvariantTransactionData, TransactionData } from "./types";
import { abiAddress, abiBytes, abiBytes32, parseUint } from "./values";

/**
 * docs/protocol.md#router-signatures: router-signer signatures that Router.sol checks when someone other than the
 * router signer calls it. EIP-191 over `keccak256(abi.encode(payload))`. removeLiquidity's payload is a static tuple,
 * so its encoding is the five words back to back with no offset word (Router.sol `SignedRemoveLiquidityData`).
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

// ---- prepare / fulfill / cancel through Router.sol (docs/protocol.md#router-signatures) -----------------------------

/** docs/protocol.md#structs TransactionData, in struct order (callDataHash and transactionId before the chain ids). */
export const TRANSACTION_DATA_ABI_TYPE =
  "tuple(address receivingChainTxManagerAddress, address user, address router, address initiator, " +
  "address sendingAssetId, address receivingAssetId, address sendingChainFallback, address receivingAddress, " +
  "address callTo, bytes32 callDataHash, bytes32 transactionId, uint256 sendingChainId, uint256 receivingChainId, " +
  "uint256 amount, uint256 expiry, uint256 preparedBlockNumber)";

export const PREPARE_ARGS_ABI_TYPE =
  `tuple(${INVARIANT_TRANSACTION_DATA_ABI_TYPE} invariantData, uint256 amount, uint256 expiry, ` +
  "bytes encryptedCallData, bytes encodedBid, bytes bidSignature, bytes encodedMeta)";

export const FULFILL_ARGS_ABI_TYPE = `tuple(${TRANSACTION_DATA_ABI_TYPE} txData, uint256 relayerFee, bytes signature, bytes callData, bytes encodedMeta)`;

export const CANCEL_ARGS_ABI_TYPE = `tuple(${TRANSACTION_DATA_ABI_TYPE} txData, bytes signature, bytes encodedMeta)`;

/** Router.sol `SignedPrepareData` / `SignedFulfillData` / `SignedCancelData`: the args, then fee asset, fee, chain id. */
const SIGNED_ROUTER_CALL_ABI_TYPES = {
  prepare: `tuple(${PREPARE_ARGS_ABI_TYPE} args, address routerRelayerFeeAsset, uint256 routerRelayerFee, uint256 chainId)`,
  fulfill: `tuple(${FULFILL_ARGS_ABI_TYPE} args, address routerRelayerFeeAsset, uint256 routerRelayerFee, uint256 chainId)`,
  cancel: `tuple(${CANCEL_ARGS_ABI_TYPE} args, address routerRelayerFeeAsset, uint256 routerRelayerFee, uint256 chainId)`,
} as const;

/** TransactionManager `PrepareArgs` (docs/protocol.md#structs); `encodedMeta` is always `0x` for the router. */
export interface PrepareArgs {
  invariantData: InvariantTransactionData;
  amount: bigint | string;
  expiry: bigint | number;
  encryptedCallData: string;
  encodedBid: string;
  bidSignature: string;
  encodedMeta: string;
}

export interface FulfillArgs {
  txData: TransactionData;
  relayerFee: bigint | string;
  /** The user's fulfill signature (docs/protocol.md#user-signatures). */
  signature: string;
  callData: string;
  encodedMeta: string;
}

export interface CancelArgs {
  txData: TransactionData;
  /**
   * `0x` for the router's own cancels (docs/protocol.md#cancel-rules); the contract needs a user signature only on the
   * receiving side before expiry.
   */
  signature: string;
  encodedMeta: string;
}

export interface RouterCallArgs {
  prepare: PrepareArgs;
  fulfill: FulfillArgs;
  cancel: CancelArgs;
}
export type RouterCallKind = keyof RouterCallArgs;

export interface RouterCallSignaturePayload<K extends RouterCallKind> {
  args: RouterCallArgs[K];
  routerRelayerFeeAsset: string;
  routerRelayerFee: bigint | string;
  /** The chain the Router call runs on (the Router's stored chain id), not the transfer's other chain. */
  chainId: number | bigint;
}

/** `InvariantTransactionData` normalised for the ABI coder, in struct order. */
export function abiInvariantData(inv: InvariantTransactionData): Record<string, string | bigint> {
  return {
    receivingChainTxManagerAddress: abiAddress(inv.receivingChainTxManagerAddress, "receivingChainTxManagerAddress"),
    user: abiAddress(inv.user, "user"),
    router: abiAddress(inv.router, "router"),
    initiator: abiAddress(inv.initiator, "initiator"),
    sendingAssetId: abiAddress(inv.sendingAssetId, "sendingAssetId"),
    receivingAssetId: abiAddress(inv.receivingAssetId, "receivingAssetId"),
    sendingChainFallback: abiAddress(inv.sendingChainFallback, "sendingChainFallback"),
    receivingAddress: abiAddress(inv.receivingAddress, "receivingAddress"),
    callTo: abiAddress(inv.callTo, "callTo"),
    sendingChainId: parseUint(inv.sendingChainId, "sendingChainId"),
    receivingChainId: parseUint(inv.receivingChainId, "receivingChainId"),
    callDataHash: abiBytes32(inv.callDataHash, "callDataHash"),
    transactionId: abiBytes32(inv.transactionId, "transactionId"),
  };
}

/** `TransactionData` normalised for the ABI coder, in struct order. */
export function abiTransactionData(txData: TransactionData): Record<string, string | bigint> {
  const inv = abiInvariantData(txData);
  return {
    receivingChainTxManagerAddress: inv.receivingChainTxManagerAddress,
    user: inv.user,
    router: inv.router,
    initiator: inv.initiator,
    sendingAssetId: inv.sendingAssetId,
    receivingAssetId: inv.receivingAssetId,
    sendingChainFallback: inv.sendingChainFallback,
    receivingAddress: inv.receivingAddress,
    callTo: inv.callTo,
    callDataHash: inv.callDataHash,
    transactionId: inv.transactionId,
    sendingChainId: inv.sendingChainId,
    receivingChainId: inv.receivingChainId,
    amount: parseUint(txData.amount, "amount"),
    expiry: parseUint(txData.expiry, "expiry"),
    preparedBlockNumber: parseUint(txData.preparedBlockNumber, "preparedBlockNumber"),
  };
}

export function abiPrepareArgs(args: PrepareArgs): Record<string, unknown> {
  return {
    invariantData: abiInvariantData(args.invariantData),
    amount: parseUint(args.amount, "amount"),
    expiry: parseUint(args.expiry, "expiry"),
    encryptedCallData: abiBytes(args.encryptedCallData, "encryptedCallData"),
    encodedBid: abiBytes(args.encodedBid, "encodedBid"),
    bidSignature: abiBytes(args.bidSignature, "bidSignature"),
    encodedMeta: abiBytes(args.encodedMeta, "encodedMeta"),
  };
}

export function abiFulfillArgs(args: FulfillArgs): Record<string, unknown> {
  return {
    txData: abiTransactionData(args.txData),
    relayerFee: parseUint(args.relayerFee, "relayerFee"),
    signature: abiBytes(args.signature, "signature"),
    callData: abiBytes(args.callData, "callData"),
    encodedMeta: abiBytes(args.encodedMeta, "encodedMeta"),
  };
}

export function abiCancelArgs(args: CancelArgs): Record<string, unknown> {
  return {
    txData: abiTransactionData(args.txData),
    signature: abiBytes(args.signature, "signature"),
    encodedMeta: abiBytes(args.encodedMeta, "encodedMeta"),
  };
}

/** A TransactionManager call's args in ABI form, for `TransactionManager.<kind>` and `Router.<kind>` alike. */
export function abiRouterCallArgs<K extends RouterCallKind>(kind: K, args: RouterCallArgs[K]): Record<string, unknown> {
  switch (kind) {
    case "prepare":
      return abiPrepareArgs(args as PrepareArgs);
    case "fulfill":
      return abiFulfillArgs(args as FulfillArgs);
    default:
      return abiCancelArgs(args as CancelArgs);
  }
}

/**
 * `abi.encode(SignedXxxData)`: one dynamic tuple, so the encoding starts with an offset word (unlike
 * removeLiquidity's static tuple).
 */
export function encodeRouterCallPayload<K extends RouterCallKind>(
  kind: K,
  payload: RouterCallSignaturePayload<K>,
): string {
  const tuple = {
    args: abiRouterCallArgs(kind, payload.args),
    routerRelayerFeeAsset: abiAddress(payload.routerRelayerFeeAsset, "routerRelayerFeeAsset"),
    routerRelayerFee: parseUint(payload.routerRelayerFee, "routerRelayerFee"),
    chainId: parseUint(payload.chainId, "chainId"),
  };
  return coder.encode([SIGNED_ROUTER_CALL_ABI_TYPES[kind]], [tuple]);
}

export function routerCallPayloadHash<K extends RouterCallKind>(
  kind: K,
  payload: RouterCallSignaturePayload<K>,
): string {
  return keccak256(encodeRouterCallPayload(kind, payload));
}

/** EIP-191 over the 32 hash bytes, as Router.sol's `recoverSignature` expects (RC_P/RC_F/RC_C:040 otherwise). */
export async function signRouterCall<K extends RouterCallKind>(
  signer: Pick<RouterSigner, "signMessage">,
  kind: K,
  payload: RouterCallSignaturePayload<K>,
): Promise<string> {
  return sanitizeSignatureV(await signer.signMessage(getBytes(routerCallPayloadHash(kind, payload))));
}

import { Interface } from "ethers";
import { abiAddress, abiBytes, abiBytes32, parseUint } from "../protocol/values";
import { loadAbi, type NxtpAbiName } from "./artifacts";

/**
 * ethers v6 `Interface`s from the nxtp-contracts ABIs (the package's typechain is ethers v5), and the
 * encode/decode helpers for the calls the router makes. Values are normalised by shared/protocol/values,
 * so a malformed amount or address fails here with a ProtocolInputError instead of deep in the ABI coder.
 */
export type ContractName = NxtpAbiName;

const interfaces = new Map<ContractName, Interface>();

export function contractInterface(name: ContractName): Interface {
  let iface = interfaces.get(name);
  if (!iface) {
    iface = new Interface(loadAbi(name));
    interfaces.set(name, iface);
  }
  return iface;
}

export interface TmRemoveLiquidityArgs {
  readonly amount: bigint | string;
  readonly assetId: string;
  readonly recipient: string;
}

/** `TransactionManager.removeLiquidity(amount, assetId, recipient)`: msg.sender is the router. */
export function encodeTmRemoveLiquidity(args: TmRemoveLiquidityArgs): string {
  return contractInterface("TransactionManager").encodeFunctionData("removeLiquidity", [
    parseUint(args.amount, "amount"),
    abiAddress(args.assetId, "assetId"),
    abiAddress(args.recipient, "recipient"),
  ]);
}

export interface RouterRemoveLiquidityArgs {
  readonly amount: bigint | string;
  readonly assetId: string;
  readonly routerRelayerFeeAsset: string;
  readonly routerRelayerFee: bigint | string;
  readonly signature: string;
}

/** `Router.removeLiquidity(...)`: the Router calls the TransactionManager, which pays the Router's recipient. */
export function encodeRouterRemoveLiquidity(args: RouterRemoveLiquidityArgs): string {
  return contractInterface("Router").encodeFunctionData("removeLiquidity", [
    parseUint(args.amount, "amount"),
    abiAddress(args.assetId, "assetId"),
    abiAddress(args.routerRelayerFeeAsset, "routerRelayerFeeAsset"),
    parseUint(args.routerRelayerFee, "routerRelayerFee"),
    abiBytes(args.signature, "signature"),
  ]);
}

export function encodeRouterBalances(router: string, assetId: string): string {
  return contractInterface("TransactionManager").encodeFunctionData("routerBalances", [
    abiAddress(router, "router"),
    abiAddress(assetId, "assetId"),
  ]);
}

export function decodeRouterBalances(data: string): bigint {
  return decodeUint("TransactionManager", "routerBalances", data);
}

export function encodeVariantTransactionData(digest: string): string {
  return contractInterface("TransactionManager").encodeFunctionData("variantTransactionData", [
    abiBytes32(digest, "digest"),
  ]);
}

export function decodeVariantTransactionData(data: string): string {
  const [value] = contractInterface("TransactionManager").decodeFunctionResult("variantTransactionData", data);
  return String(value);
}

export function encodeErc20BalanceOf(owner: string): string {
  return contractInterface("ERC20").encodeFunctionData("balanceOf", [abiAddress(owner, "owner")]);
}

export function decodeErc20BalanceOf(data: string): bigint {
  return decodeUint("ERC20", "balanceOf", data);
}

export function encodeErc20Decimals(): string {
  return contractInterface("ERC20").encodeFunctionData("decimals", []);
}

export function decodeErc20Decimals(data: string): number {
  return Number(decodeUint("ERC20", "decimals", data));
}

function decodeUint(name: ContractName, fn: string, data: string): bigint {
  const [value] = contractInterface(name).decodeFunctionResult(fn, data);
  if (typeof value !== "bigint") {
    throw new TypeError(`${name}.${fn} did not decode to a uint`);
  }
  return value;
}

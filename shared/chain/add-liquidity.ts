import { ZeroAddress, type BlockTag } from "ethers";
import { RouterError, errorClass } from "../errors";
import { abiAddress, parseUint } from "../protocol/values";
import type { ChainProvider } from "./chain-provider";
import { contractInterface } from "./contracts";
import { readAssetBalance } from "./router-balances";

/**
 * What `TransactionManager.addLiquidityFor` needs, read once for the admin's checks (before anything is enqueued)
 * and again by the submitter's add-liquidity-for job (before anything is sent). v0.1.42's
 * `_addLiquidityForRouter` requires the router approved or router ownership renounced (`#AL:003`), the asset
 * approved or asset ownership renounced (`#AL:004`), then pulls `amount` from msg.sender (ERC-20 allowance) or
 * takes msg.value == amount (native, `#TA:005`).
 */
export interface AddLiquidityState {
  readonly routerApproved: boolean;
  readonly assetApproved: boolean;
  /** The sending wallet's balance of the asset (native balance for the zero address). */
  readonly walletBalance: bigint;
  /** The wallet's ERC-20 allowance to the TransactionManager; undefined for the native asset. */
  readonly allowance?: bigint;
}

export interface AddLiquidityStateParams {
  readonly transactionManager: string;
  /** The router credited: the signer, the Router contract or another router. */
  readonly router: string;
  readonly assetId: string;
  /** The wallet that pays: the router's signer. */
  readonly wallet: string;
  readonly blockTag?: BlockTag;
}

export function isNativeAsset(assetId: string): boolean {
  return assetId.toLowerCase() === ZeroAddress;
}

export async function readAddLiquidityState(
  provider: Pick<ChainProvider, "call" | "getBalance">,
  p: AddLiquidityStateParams,
): Promise<AddLiquidityState> {
  const tm = contractInterface("TransactionManager");
  const readBool = async (fn: string, args: unknown[]): Promise<boolean> => {
    const data = await provider.call({ to: p.transactionManager, data: tm.encodeFunctionData(fn, args) }, p.blockTag);
    return Boolean(tm.decodeFunctionResult(fn, data)[0]);
  };
  const router = abiAddress(p.router, "router");
  const assetId = abiAddress(p.assetId, "assetId");
  const [routerApproved, assetApproved, walletBalance, allowance] = await Promise.all([
    readBool("approvedRouters", [router]).then(async (ok) => ok || readBool("isRouterOwnershipRenounced", [])),
    readBool("approvedAssets", [assetId]).then(async (ok) => ok || readBool("isAssetOwnershipRenounced", [])),
    readAssetBalance(provider, assetId, p.wallet),
    isNativeAsset(assetId) ? undefined : readAllowance(provider, assetId, p.wallet, p.transactionManager, p.blockTag),
  ]);
  return { routerApproved, assetApproved, walletBalance, allowance };
}

export async function readAllowance(
  provider: Pick<ChainProvider, "call">,
  assetId: string,
  owner: string,
  spender: string,
  blockTag?: BlockTag,
): Promise<bigint> {
  const erc20 = contractInterface("ERC20");
  const data = await provider.call(
    {
      to: assetId,
      data: erc20.encodeFunctionData("allowance", [abiAddress(owner, "owner"), abiAddress(spender, "spender")]),
    },
    blockTag,
  );
  return BigInt(erc20.decodeFunctionResult("allowance", data)[0] as bigint);
}

/** `ERC20.approve(spender, amount)`. */
export function encodeErc20Approve(spender: string, amount: bigint | string): string {
  return contractInterface("ERC20").encodeFunctionData("approve", [
    abiAddress(spender, "spender"),
    parseUint(amount, "amount"),
  ]);
}

/** `TransactionManager.addLiquidityFor(amount, assetId, router)`: payable, msg.value == amount for native. */
export function encodeTmAddLiquidityFor(args: { amount: bigint | string; assetId: string; router: string }): string {
  return contractInterface("TransactionManager").encodeFunctionData("addLiquidityFor", [
    parseUint(args.amount, "amount"),
    abiAddress(args.assetId, "assetId"),
    abiAddress(args.router, "router"),
  ]);
}

/** The router to credit is neither approved on the TransactionManager nor is router ownership renounced (`#AL:003`). */
export class RouterNotApprovedError extends errorClass(RouterError, "ROUTER_NOT_APPROVED", "terminal") {}

/** The asset is neither approved on the TransactionManager nor is asset ownership renounced (`#AL:004`). */
export class AssetNotApprovedError extends errorClass(RouterError, "ASSET_NOT_APPROVED", "terminal") {}

/** The router's wallet holds less of the asset than the amount to add. */
export class InsufficientWalletBalanceError extends errorClass(
  RouterError,
  "INSUFFICIENT_WALLET_BALANCE",
  "terminal",
) {}

/**
 * The first refusal of an add, checked in this order, or undefined when the contract would take it (gas aside:
 * a native add also needs the gas on top, which the estimate and the send check).
 */
export function addLiquidityRefusal(
  state: AddLiquidityState,
  p: { chainId: number; assetId: string; router: string; amount: bigint },
): RouterError | undefined {
  const context = { chainId: p.chainId, assetId: p.assetId, router: p.router };
  if (!state.routerApproved) {
    return new RouterNotApprovedError(
      `router ${p.router} is not approved on chain ${p.chainId}'s TransactionManager (addRouter), and router ownership is not renounced`,
      context,
    );
  }
  if (!state.assetApproved) {
    return new AssetNotApprovedError(
      `asset ${p.assetId} is not approved on chain ${p.chainId}'s TransactionManager (addAssetId), and asset ownership is not renounced`,
      context,
    );
  }
  if (state.walletBalance < p.amount) {
    return new InsufficientWalletBalanceError(
      `the router's wallet holds ${state.walletBalance.toString()} of ${p.assetId} on chain ${p.chainId}, less than ${p.amount.toString()}`,
      { ...context, walletBalance: state.walletBalance.toString(), amount: p.amount.toString() },
    );
  }
  return undefined;
}

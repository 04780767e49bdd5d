import type { Queue } from "bullmq";
import { SenderNotPreparedError } from "../../../shared/chain/sender-cancel-errors";
import { TransferMismatchError } from "../../../shared/protocol/errors";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { contractInterface } from "../../../shared/chain/contracts";
import { TransactionRevertedError } from "../../../shared/chain/errors";
import { readSideState, type SideState } from "../../../shared/chain/side-state";
import type { ChainConfig, RouterConfig } from "../../../shared/config/types";
import type { Logger } from "../../../shared/logging/create-logger";
import {
  abiRouterCallArgs,
  signRouterCall,
  type RouterCallArgs,
  type RouterCallKind,
} from "../../../shared/protocol/router-signatures";
import type { TransactionData } from "../../../shared/protocol/types";
import type { ScriptClient } from "../../../shared/redis/script-runner";
import { sameHex } from "../../../shared/protocol/values";
import type { RouterSigner } from "../../../shared/signer/router-signer";
import type { TxCall, TxNoop } from "../send/tx-record";
import {
  ChainNotConfiguredError,
  ReceiverDataMismatchError,
  ReceiverNotPreparedError,
  SenderDataMismatchError,
} from "./errors";
import { estimatedCall } from "./estimated-call";
import type { JobLiquidity } from "../liquidity-in-flight";

/** What the lifecycle operations need from the submitter process; SubmitterContext satisfies it. */
export interface LifecycleContext {
  readonly config: RouterConfig;
  /** The queue's chain: the one this job's transaction is sent on. */
  readonly chain: ChainConfig;
  readonly chainId: number;
  readonly provider: ChainProvider;
  readonly signer: Pick<RouterSigner, "signMessage">;
  /** The signer's address: the sender of every transaction, and the router in direct mode. */
  readonly from: string;
  readonly logger: Logger;
  /** A read provider for another configured chain (this chain's own provider for `chainId`); undefined if not configured. */
  readonly readProvider: (chainId: number) => ChainProvider | undefined;
  /** Producer handle of a configured chain's transaction queue; undefined if not configured. */
  readonly txQueue: (chainId: number) => Queue | undefined;
  /** Plain Redis connection, for other chains' transaction records and the transfer decision (shared/coordination/transfer-decision.ts). */
  readonly redis: Pick<Redis, "hget" | "hmget" | "get" | "exists"> & ScriptClient;
  /** This job's view of the liquidity other concurrent jobs hold (absent outside a submitter: no holds). */
  readonly liquidity?: JobLiquidity;
}

/** `invariant.router` of our transfers: the Router contract in router-contract mode, else the signer. */
export function routerAddressOf(ctx: Pick<LifecycleContext, "config" | "from">): string {
  return ctx.config.routerContractAddress ?? ctx.from;
}

/** Refuses a transfer that does not name our router: only that address may prepare, fulfill or cancel (before expiry). */
export function assertOurTransfer(ctx: LifecycleContext, txData: TransactionData): void {
  if (!sameHex(txData.router, routerAddressOf(ctx))) {
    throw new TransferMismatchError(`transfer router ${txData.router} is not ours (${routerAddressOf(ctx)})`, {
      transactionId: txData.transactionId,
    });
  }
}

export function chainConfigOf(ctx: Pick<LifecycleContext, "config">, chainId: number): ChainConfig {
  const chain = ctx.config.chainConfig[String(chainId)];
  if (!chain) {
    throw new ChainNotConfiguredError(`chain ${chainId} is not in chainConfig`, { chainId });
  }
  return chain;
}

export function readProviderOf(ctx: LifecycleContext, chainId: number): ChainProvider {
  const provider = ctx.readProvider(chainId);
  if (!provider) {
    throw new ChainNotConfiguredError(`chain ${chainId} is not in chainConfig`, { chainId });
  }
  return provider;
}

/** Moved to shared/chain/side-state.ts (the auction reads it too); re-exported for the operations. */
export { readSideState, type SideState } from "../../../shared/chain/side-state";

/** Wall-clock ms at which the chain's clock (now `chainNowSec`) will be past `targetSec`, plus a block's slack. */
export function wallClockMsWhenChainPasses(chainNowSec: number, targetSec: number): number {
  return Date.now() + Math.max(0, targetSec - chainNowSec + 1) * 1000 + 2_000;
}

export function noop(reason: string, blockNumber: number): TxNoop {
  return { noop: true, reason, blockNumber };
}

/**
 * The transaction for `TransactionManager.<kind>(args)`, sent on this chain by the signer:
 * - direct mode: to the TransactionManager (the signer is the router);
 * - router-contract mode: `Router.<kind>(args, relayerFeeAsset, 0, routerSignature)`
 *   (docs/protocol.md#router-contract-calls). The Router skips the signature for its signer, but it is the valid one
 *   for this chain, so the same call data would also work relayed. The fee asset comes from *this* chain's config (the
 *   original took the receiving chain's for a sending fulfill, docs/protocol.md#deviation-router-contract).
 * Checked with eth_estimateGas: a revert fails here, before any nonce is used.
 */
export async function buildTransferCall<K extends RouterCallKind>(
  ctx: LifecycleContext,
  kind: K,
  args: RouterCallArgs[K],
): Promise<TxCall> {
  const routerContract = ctx.config.routerContractAddress;
  const tmArgs = abiRouterCallArgs(kind, args);
  let to: string;
  let data: string;
  if (routerContract) {
    const payload = {
      args,
      routerRelayerFeeAsset: ctx.chain.routerContractRelayerAsset,
      routerRelayerFee: 0n,
      chainId: ctx.chainId,
    };
    const signature = await signRouterCall(ctx.signer, kind, payload);
    to = routerContract;
    data = contractInterface("Router").encodeFunctionData(kind, [
      tmArgs,
      payload.routerRelayerFeeAsset.toLowerCase(),
      0n,
      signature,
    ]);
  } else {
    to = ctx.chain.transactionManagerAddress;
    data = contractInterface("TransactionManager").encodeFunctionData(kind, [tmArgs]);
  }
  return estimatedCall(ctx, to, data);
}

/** The NXTP revert code (`P:015`) of a revert at estimation, if that is what `err` is. */
export function revertCodeOf(err: unknown): string | undefined {
  return err instanceof TransactionRevertedError ? err.revertCode : undefined;
}

/** Which side of the transfer lives on the queue's chain. */
export type TransferSide = "sending" | "receiving";

/**
 * The common opening of the fulfill and cancel jobs: the transfer must name our router and have this side on
 * the queue's chain; then the sanitation check (docs/protocol.md#sanitation-check) here: completed (fulfilled or
 * cancelled) is a no-op, not prepared or another variant is terminal. Returns the chain's state when the side is
 * prepared as the job says.
 */
export async function openPreparedSide(
  ctx: LifecycleContext,
  txData: TransactionData,
  side: TransferSide,
): Promise<{ state: SideState } | { noop: TxNoop }> {
  const sideChainId = side === "sending" ? txData.sendingChainId : txData.receivingChainId;
  if (sideChainId !== ctx.chainId) {
    throw new TransferMismatchError(
      `the ${side} side of this transfer is on chain ${sideChainId}, not on chain ${ctx.chainId}`,
      {
        transactionId: txData.transactionId,
      },
    );
  }
  assertOurTransfer(ctx, txData);
  const state = await readSideState(ctx.provider, ctx.chain.transactionManagerAddress, txData);
  const context = { transactionId: txData.transactionId, classification: state.classification };
  switch (state.classification) {
    case "completed":
      return { noop: noop(`${side} side already fulfilled or cancelled`, state.blockNumber) };
    case "not-prepared":
      throw side === "sending"
        ? new SenderNotPreparedError("the sending side is not prepared on chain", context)
        : new ReceiverNotPreparedError("the receiving side is not prepared on chain", context);
    case "mismatch":
      throw side === "sending"
        ? new SenderDataMismatchError("the chain stores another variant than the job's sending data", context)
        : new ReceiverDataMismatchError("the chain stores another variant than the job's receiving data", context);
    default:
      return { state };
  }
}

/**
 * `buildTransferCall` for a fulfill or cancel whose "variant mismatch" revert (#F:019 / #C:019) most often
 * means the side was completed after the sanitation check (the user fulfilled at the last second, another
 * caller cancelled after expiry): the chain is read again and a completed side is a no-op.
 */
export async function buildUnlessCompleted<K extends "fulfill" | "cancel">(
  ctx: LifecycleContext,
  kind: K,
  args: RouterCallArgs[K],
): Promise<TxCall | TxNoop> {
  try {
    return await buildTransferCall(ctx, kind, args);
  } catch (err) {
    const alreadyDone = kind === "fulfill" ? "F:019" : "C:019";
    if (revertCodeOf(err) === alreadyDone) {
      const again = await readSideState(ctx.provider, ctx.chain.transactionManagerAddress, args.txData);
      if (again.classification === "completed") {
        return noop(`completed meanwhile (#${alreadyDone} at estimation)`, again.blockNumber);
      }
    }
    throw err;
  }
}

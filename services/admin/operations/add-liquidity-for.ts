import { getAddress } from "ethers";
import {
  addLiquidityRefusal,
  readAddLiquidityState,
  type AddLiquidityState,
  type AddLiquidityStateParams,
} from "../../../shared/chain/add-liquidity";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { poolAssetsOf } from "../../../shared/config/pools";
import type { RouterConfig } from "../../../shared/config/types";
import { errorCode } from "../../../shared/errors";
import { TX_JOB, type AddLiquidityForJobData } from "../../../shared/queues";
import { withTimeout } from "../../../shared/timing";
import type { AddLiquidityForRequest, OperationContext, TransactionResponse } from "../types";
import { PRE_ENQUEUE_READ_TIMEOUT_MS, type ContentClaimDeps } from "./content-claim";
import type { TxRequestDeps } from "./enqueue-and-wait";
import { moneyRequest } from "./money-request";
import { ChainUnavailableError } from "./errors";
import { AssetNotInPoolError } from "./liquidity-errors";

export interface AddLiquidityForDeps extends ContentClaimDeps, TxRequestDeps {
  readonly config: RouterConfig;
  /** The router credited by default: the Router contract in router-contract mode, else the signer. */
  readonly routerAddress: string;
  /** The wallet that pays: the router's signer. */
  readonly signerAddress: string;
  readProvider(chainId: number): Pick<ChainProvider, "call" | "getBalance">;
}

export type AddLiquidityForOperation = (
  params: AddLiquidityForRequest,
  ctx: OperationContext,
) => Promise<TransactionResponse>;

/**
 * POST /add-liquidity-for: the router's own wallet adds `amount` to a router's liquidity, through the chain's
 * submitter (job `add-liquidity-for-<requestId>`):
 * 1. a job under the request id is reused (same fields) or refused (REQUEST_ID_CONFLICT): a retry never adds twice;
 * 2. the asset must be in a swap pool on the chain (ASSET_NOT_IN_POOL);
 * 3. a request identical in content (chain, asset, amount, router) to one accepted in the last
 *    CONTENT_CLAIM_WINDOW_MS, under any request id (a retry after a 504 without X-Request-Id), is answered by that
 *    job, unless it failed with nothing on chain (content-claim.ts);
 * 4. the chain must take it: router approved (ROUTER_NOT_APPROVED), asset approved (ASSET_NOT_APPROVED), the wallet
 *    holding `amount` (INSUFFICIENT_WALLET_BALANCE); a read that fails is CHAIN_UNAVAILABLE, nothing enqueued;
 * 5. enqueue and answer with the add's hash once broadcast. The submitter checks again, approves only what the
 *    allowance lacks, and sends the add (services/submitter/operations/add-liquidity-for.ts).
 */
export function createAddLiquidityForOperation(deps: AddLiquidityForDeps): AddLiquidityForOperation {
  return (params, ctx) => {
    const data: AddLiquidityForJobData = {
      chainId: params.chainId,
      assetId: params.assetId,
      amount: params.amount,
      router: params.routerAddress ?? deps.routerAddress,
      requestId: ctx.requestId,
    };
    // Steps 1-5 (above) in the one flow both money requests share (money-request.ts).
    return moneyRequest(deps, ctx, {
      kind: TX_JOB.addLiquidityFor,
      chainId: data.chainId,
      data,
      contentFields: [data.chainId, data.assetId, data.amount, data.router],
      precheck: () => assertPoolAsset(deps.config, params.chainId, params.assetId),
      check: () => assertAddAccepted(deps, data),
      at: "admin.addLiquidityFor",
      logged: { assetId: data.assetId, amount: data.amount, router: data.router },
    });
  };
}

/** Step 2: liquidity of an asset in no pool on the chain would never be bid with. */
export function assertPoolAsset(config: RouterConfig, chainId: number, assetId: string): void {
  if (!poolAssetsOf(config, chainId).includes(getAddress(assetId))) {
    throw new AssetNotInPoolError(`asset ${assetId} is in no swap pool on chain ${chainId}`, { chainId, assetId });
  }
}

/** Step 4: the first refusal of the chain's state, or CHAIN_UNAVAILABLE when it cannot be read. */
async function assertAddAccepted(deps: AddLiquidityForDeps, data: AddLiquidityForJobData): Promise<void> {
  const state = await readChainState(deps, data.chainId, {
    router: data.router,
    assetId: data.assetId,
    wallet: deps.signerAddress,
  });
  const refusal = addLiquidityRefusal(state, {
    chainId: data.chainId,
    assetId: data.assetId,
    router: data.router,
    amount: BigInt(data.amount),
  });
  if (refusal) {
    throw refusal;
  }
}

/** The chain's TransactionManager state for an add; its message names only the code (RPC URLs may hold keys). */
export async function readChainState(
  deps: Pick<AddLiquidityForDeps, "config" | "readProvider">,
  chainId: number,
  p: Omit<AddLiquidityStateParams, "transactionManager">,
): Promise<AddLiquidityState> {
  const transactionManager = deps.config.chainConfig[String(chainId)].transactionManagerAddress;
  try {
    return await withTimeout(
      readAddLiquidityState(deps.readProvider(chainId), { ...p, transactionManager }),
      PRE_ENQUEUE_READ_TIMEOUT_MS,
    );
  } catch (err) {
    throw new ChainUnavailableError(
      `could not read chain ${chainId}'s TransactionManager state (${errorCode(err)}); nothing was enqueued`,
      { chainId },
      { cause: err },
    );
  }
}

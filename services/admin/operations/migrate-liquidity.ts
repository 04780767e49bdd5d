import type { Job, Queue, QueueEvents } from "bullmq";
import { poolAssetsOf } from "../../../shared/config/pools";
import type { RouterConfig } from "../../../shared/config/types";
import { errorCode, errorMessage } from "../../../shared/errors";
import type { TransferRecord } from "../../../shared/protocol/types";
import {
  TX_JOB,
  txJobId,
  txJobOptions,
  type AddLiquidityForJobData,
  type RemoveLiquidityJobData,
  type TxJobResult,
} from "../../../shared/queues";
import {
  BroadcastWaitTimeoutError,
  TxJobFailedError,
  waitForBroadcast,
} from "../../../shared/queues/wait-for-broadcast";
import { withTimeout } from "../../../shared/timing";
import type { MigrateLiquidityEntry, MigrateLiquidityRequest, OperationContext } from "../types";
import { readChainState } from "./add-liquidity-for";
import { DEFAULT_BROADCAST_TIMEOUT_MS, queueCall, type TxRequestDeps } from "./enqueue-and-wait";
import { BalanceUnavailableError } from "./errors";
import {
  CleanUpModeOffError,
  MigrationNeedsDirectModeError,
  NothingToMigrateError,
  OpenTransfersError,
} from "./liquidity-errors";
import { assertSameJobData } from "./same-request";
import { AssetNotApprovedError, RouterNotApprovedError } from "../../../shared/chain/add-liquidity";
import type { ChainProvider } from "../../../shared/chain/chain-provider";

/**
 * How long one asset's withdrawal may take to be mined and confirmed before its add is enqueued; past it the
 * asset answers BROADCAST_TIMEOUT and the same request (same X-Request-Id) later carries on from there.
 */
export const DEFAULT_REMOVAL_TIMEOUT_MS = 120_000;
const BALANCE_READ_TIMEOUT_MS = 10_000;

export interface MigrateLiquidityDeps extends TxRequestDeps {
  readonly config: RouterConfig;
  /** The signer: the direct-mode router whose liquidity moves, and the wallet the add spends from. */
  readonly signerAddress: string;
  readProvider(chainId: number): Pick<ChainProvider, "call" | "getBalance">;
  /** The signer's unlocked liquidity in the TransactionManager, base units. */
  readUnlockedBalance(chainId: number, assetId: string): Promise<bigint>;
  /** Prepared transfer sides the pollers stored on a chain (the transfer store's open index). */
  listOpen(chainId: number): Promise<readonly TransferRecord[]>;
  readonly removalTimeoutMs?: number;
}

export type MigrateLiquidityOperation = (
  params: MigrateLiquidityRequest,
  ctx: OperationContext,
) => Promise<MigrateLiquidityEntry[]>;

/**
 * POST /migrate-liquidity: moves the signer's unlocked liquidity of each asset to `newRouterAddress` (how an
 * operator leaves direct mode for a Router contract):
 * 1. direct mode only (MIGRATION_NEEDS_DIRECT_MODE), in clean-up mode only (CLEAN_UP_MODE_OFF: a router still
 *    bidding could take a new transfer between step 2 and the withdrawal);
 * 2. refused while the chain has open transfers (OPEN_TRANSFERS): sides prepared on it, and sending sides on other
 *    chains that receive on it. The way is clean-up mode, wait until drained, then migrate;
 * 3. per asset, one after the other (the pool assets of the chain by default), each answering its own entry:
 *    the new router and the asset approved on the chain, the unlocked balance (only unlocked liquidity moves;
 *    none is NOTHING_TO_MIGRATE), a remove-liquidity job to the signer's wallet, mined and confirmed, then an
 *    add-liquidity-for job of the same amount for the new router, answered once broadcast.
 * Job ids are `<job>-migrate-<requestId>-<asset>`: the same request again (same X-Request-Id) resumes each asset
 * where it stopped, with the amount of its first withdrawal; nothing is withdrawn or added twice.
 */
export function createMigrateLiquidityOperation(deps: MigrateLiquidityDeps): MigrateLiquidityOperation {
  return async (params, ctx) => {
    const logger = deps.logger.child({ requestId: ctx.requestId, chainId: params.chainId });
    if (deps.config.routerContractAddress) {
      throw new MigrationNeedsDirectModeError(
        "migrate-liquidity moves the signer's direct-mode liquidity; in router-contract mode withdraw with remove-liquidity and add with add-liquidity-for",
      );
    }
    if (!deps.config.cleanUpMode) {
      throw new CleanUpModeOffError(
        "migrate-liquidity needs cleanUpMode: set it, restart the router so it stops bidding, wait until no transfer is open, then migrate",
      );
    }
    await assertDrained(deps, params.chainId);
    const assets = params.assets ?? poolAssetsOf(deps.config, params.chainId);
    const entries: MigrateLiquidityEntry[] = [];
    for (const assetId of assets) {
      try {
        entries.push(await migrateAsset(deps, params, assetId, ctx.requestId));
      } catch (err) {
        logger.warn("asset not migrated", { at: "admin.migrateLiquidity", assetId, code: errorCode(err) });
        entries.push({ assetId, failure: err });
      }
    }
    logger.info("migrate-liquidity answered", {
      at: "admin.migrateLiquidity",
      newRouterAddress: params.newRouterAddress,
      moved: entries.filter((e) => e.addLiquidityForTx !== undefined).length,
      assets: entries.length,
    });
    return entries;
  };
}

/** Step 2: no open side on the chain, and no sending side elsewhere waiting for this chain's liquidity. */
async function assertDrained(deps: MigrateLiquidityDeps, chainId: number): Promise<void> {
  // Redis failing here is QUEUE_UNAVAILABLE (503): nothing enqueued.
  const lists = await queueCall(() =>
    Promise.all(Object.values(deps.config.chainConfig).map((chain) => deps.listOpen(chain.chainId))),
  );
  const open = lists.flat().filter((r) => r.chainId === chainId || r.txData.receivingChainId === chainId).length;
  if (open > 0) {
    throw new OpenTransfersError(
      `chain ${chainId} has ${open} open transfer side(s): turn on clean-up mode, wait until they are claimed or cancelled, then migrate`,
      { chainId, open },
    );
  }
}

/** Step 3 for one asset: withdraw to the wallet, mined and confirmed, then add for the new router. */
async function migrateAsset(
  deps: MigrateLiquidityDeps,
  params: MigrateLiquidityRequest,
  assetId: string,
  requestId: string,
): Promise<MigrateLiquidityEntry> {
  const { chainId, newRouterAddress } = params;
  const key = `migrate-${requestId}-${assetId.toLowerCase()}`;
  const queue = deps.queueFor(chainId);
  const events = deps.queueEventsFor(chainId);
  const removeId = txJobId(TX_JOB.removeLiquidity, key);
  const addId = txJobId(TX_JOB.addLiquidityFor, key);

  const removal = await queueCall(() => queue.getJob(removeId));
  const amount = removal
    ? String((removal.data as RemoveLiquidityJobData).amount)
    : await unlockedAmount(deps, params, assetId);
  // The jobs' requestId is the per-asset key: the submitter runs a money job only under the id its data gives
  // (jobs.ts ownTxJobId), and the key still carries the API request's id for the log lines.
  const removeData: RemoveLiquidityJobData = {
    chainId,
    assetId,
    amount,
    recipientAddress: deps.signerAddress,
    requestId: key,
  };
  const addData: AddLiquidityForJobData = { chainId, assetId, amount, router: newRouterAddress, requestId: key };
  if (removal) {
    assertSameJobData(removal, removeData, removeId, "migrate-liquidity");
  } else {
    await assertNewRouterTakes(deps, chainId, newRouterAddress, assetId);
    await queueCall(() =>
      queue.add(TX_JOB.removeLiquidity, removeData, txJobOptions(TX_JOB.removeLiquidity, removeId)),
    );
  }
  const removed = await waitForResult(queue, events, removeId, deps.removalTimeoutMs ?? DEFAULT_REMOVAL_TIMEOUT_MS);

  const existingAdd = await queueCall(() => queue.getJob(addId));
  if (existingAdd) {
    assertSameJobData(existingAdd, addData, addId, "migrate-liquidity");
  }
  const added = await waitForBroadcast({
    queue,
    events,
    jobId: addId,
    timeoutMs: deps.broadcastTimeoutMs ?? DEFAULT_BROADCAST_TIMEOUT_MS,
    enqueue: existingAdd
      ? undefined
      : () => queueCall(() => queue.add(TX_JOB.addLiquidityFor, addData, txJobOptions(TX_JOB.addLiquidityFor, addId))),
  });
  return { assetId, amount, removeLiquidityTx: removed.transactionHash, addLiquidityForTx: added.transactionHash };
}

async function unlockedAmount(
  deps: MigrateLiquidityDeps,
  params: MigrateLiquidityRequest,
  assetId: string,
): Promise<string> {
  let unlocked: bigint;
  try {
    unlocked = await withTimeout(deps.readUnlockedBalance(params.chainId, assetId), BALANCE_READ_TIMEOUT_MS);
  } catch (err) {
    throw new BalanceUnavailableError(
      `could not read the router's unlocked balance on chain ${params.chainId}`,
      { chainId: params.chainId, assetId },
      { cause: err },
    );
  }
  if (unlocked === 0n) {
    throw new NothingToMigrateError(`no unlocked liquidity of ${assetId} on chain ${params.chainId}`, {
      chainId: params.chainId,
      assetId,
    });
  }
  return unlocked.toString();
}

/** The add must not fail after the withdrawal: the new router and the asset approved on the chain first. */
async function assertNewRouterTakes(
  deps: MigrateLiquidityDeps,
  chainId: number,
  router: string,
  assetId: string,
): Promise<void> {
  const state = await readChainState(deps, chainId, { router, assetId, wallet: deps.signerAddress });
  if (!state.routerApproved) {
    throw new RouterNotApprovedError(
      `router ${router} is not approved on chain ${chainId}'s TransactionManager, and router ownership is not renounced`,
      { chainId, router },
    );
  }
  if (!state.assetApproved) {
    throw new AssetNotApprovedError(`asset ${assetId} is not approved on chain ${chainId}'s TransactionManager`, {
      chainId,
      assetId,
    });
  }
}

/** The job's confirmed result: TRANSACTION_FAILED when it failed, BROADCAST_TIMEOUT (job id) when not done in time. */
async function waitForResult(
  queue: Queue,
  events: QueueEvents,
  jobId: string,
  timeoutMs: number,
): Promise<TxJobResult> {
  const job: Job | undefined = await queueCall(() => queue.getJob(jobId));
  if (!job) {
    throw new TxJobFailedError(`job ${jobId} is gone from the queue`, { jobId });
  }
  let result: TxJobResult;
  try {
    result = (await job.waitUntilFinished(events, timeoutMs)) as TxJobResult;
  } catch (err) {
    if (/timed out/i.test(errorMessage(err))) {
      throw new BroadcastWaitTimeoutError(
        `the withdrawal was not confirmed within ${timeoutMs / 1000}s; send the same request again to carry on`,
        { jobId },
      );
    }
    throw new TxJobFailedError(`the withdrawal failed: ${errorMessage(err)}`, { jobId });
  }
  if (result.noop) {
    throw new TxJobFailedError("the withdrawal completed without a transaction", { jobId });
  }
  return result;
}

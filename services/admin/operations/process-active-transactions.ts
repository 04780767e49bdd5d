import type { Redis } from "ioredis";
import type { RouterConfig } from "../../../shared/config/types";
import type { Logger } from "../../../shared/logging/create-logger";
import type { TransferRecord } from "../../../shared/protocol/types";
import { reconcileRequestKey } from "../../../shared/coordination/keys";
import type { ActiveTransaction, OperationContext } from "../types";
import { queueCall } from "./enqueue-and-wait";

export interface ProcessActiveTransactionsDeps {
  readonly config: RouterConfig;
  readonly redis: Pick<Redis, "set">;
  /** Prepared transfer sides the pollers stored on a chain (the transfer store's open index). */
  listOpen(chainId: number): Promise<readonly TransferRecord[]>;
  readonly logger: Logger;
}

export type ProcessActiveTransactionsOperation = (ctx: OperationContext) => Promise<ActiveTransaction[]>;

/**
 * POST /process-active-transactions: every open transfer of the router handled again. The admin does not decide
 * transfers (only the pollers do, under their lease); it asks each chain's poller, through
 * `reconcileRequestKey`, to reconcile every open record against both chains at its next tick and decide each
 * again (a failed job retried, a missed event stored, a due cancel or claim enqueued: docs/poller.md). The
 * answer is the open sides found, as the original's array; the request is kept until a poller has done it.
 */
export function createProcessActiveTransactionsOperation(
  deps: ProcessActiveTransactionsDeps,
): ProcessActiveTransactionsOperation {
  return async (ctx) => {
    const chainIds = Object.values(deps.config.chainConfig).map((chain) => chain.chainId);
    const requestedAtMs = Date.now();
    const found: ActiveTransaction[] = [];
    for (const chainId of chainIds) {
      await queueCall(() =>
        deps.redis.set(reconcileRequestKey(deps.config.redisPrefix, chainId), String(requestedAtMs)),
      );
      const open = await queueCall(() => deps.listOpen(chainId));
      found.push(...open.map(activeTransactionOf));
    }
    deps.logger.info("every open transfer handed to the pollers again", {
      at: "admin.processActiveTransactions",
      requestId: ctx.requestId,
      chains: chainIds.length,
      open: found.length,
    });
    return found;
  };
}

function activeTransactionOf(record: TransferRecord): ActiveTransaction {
  const { txData } = record;
  return {
    chainId: record.chainId,
    transactionId: txData.transactionId,
    user: txData.user,
    sendingChainId: txData.sendingChainId,
    receivingChainId: txData.receivingChainId,
    amount: String(txData.amount),
    expiry: Number(txData.expiry),
    status: record.status,
  };
}

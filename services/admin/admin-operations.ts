import type { Redis } from "ioredis";
import type { ChainProvider } from "../../shared/chain/chain-provider";
import type { RouterBalanceReader } from "../../shared/chain/router-balances";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { replicationGuard } from "../../shared/coordination/replication";
import type { TransferStore } from "../../shared/transfers/transfer-store";
import type { ChainQueues } from "./chain-queues";
import { createAddLiquidityForOperation } from "./operations/add-liquidity-for";
import { createCancelSenderOperation } from "./operations/cancel-sender";
import type { ContentClaimDeps } from "./operations/content-claim";
import { createMigrateLiquidityOperation } from "./operations/migrate-liquidity";
import { createProcessActiveTransactionsOperation } from "./operations/process-active-transactions";
import { DEFAULT_BROADCAST_TIMEOUT_MS, type TxRequestDeps } from "./operations/enqueue-and-wait";
import { createRemoveLiquidityOperation } from "./operations/remove-liquidity";
import type { AdminOperations } from "./types";

export interface AdminOperationsDeps {
  readonly config: RouterConfig;
  readonly logger: Logger;
  readonly routerAddress: string;
  readonly signerAddress: string;
  readonly queues: ChainQueues;
  readonly redis: Redis;
  readonly transfers: TransferStore;
  readProvider(chainId: number): ChainProvider;
  readonly readUnlockedBalance: RouterBalanceReader;
}

/**
 * The admin API's operations (docs/admin-api.md) over the process's resources, which start-admin.ts owns and
 * closes. Operations that enqueue a transaction wait up to DEFAULT_BROADCAST_TIMEOUT_MS for its broadcast.
 */
export function createAdminOperations(d: AdminOperationsDeps): AdminOperations {
  const { config, logger, queues, redis, transfers } = d;
  const listOpen = (chainId: number) => transfers.listOpen(chainId);
  const txRequests: TxRequestDeps = {
    queueFor: queues.queueFor,
    queueEventsFor: queues.queueEventsFor,
    broadcastTimeoutMs: DEFAULT_BROADCAST_TIMEOUT_MS,
    logger,
  };
  /** A money request's content claim, on replicas when redis.minReplicas asks (content-claim.ts). */
  const contentClaims: ContentClaimDeps = {
    redis,
    redisPrefix: config.redisPrefix,
    replication: replicationGuard(redis, config.redisPrefix, config.redisReplication),
  };
  return {
    removeLiquidity: createRemoveLiquidityOperation({
      ...txRequests,
      ...contentClaims,
      readUnlockedBalance: d.readUnlockedBalance,
    }),
    cancelSender: createCancelSenderOperation({
      config,
      routerAddress: d.routerAddress,
      ...txRequests,
      redis,
      readProvider: d.readProvider,
      findTransfer: (chainId, transactionId, user) => transfers.get(chainId, transactionId, user),
    }),
    addLiquidityFor: createAddLiquidityForOperation({
      config,
      routerAddress: d.routerAddress,
      signerAddress: d.signerAddress,
      ...txRequests,
      ...contentClaims,
      readProvider: d.readProvider,
    }),
    migrateLiquidity: createMigrateLiquidityOperation({
      config,
      signerAddress: d.signerAddress,
      ...txRequests,
      readProvider: d.readProvider,
      readUnlockedBalance: d.readUnlockedBalance,
      listOpen,
    }),
    processActiveTransactions: createProcessActiveTransactionsOperation({ config, redis, listOpen, logger }),
  };
}

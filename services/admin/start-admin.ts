import type { ChainProvider } from "../../shared/chain/chain-provider";
import { observeHeartbeats } from "../../shared/process/observe-chain";
import type { ServiceContext } from "../../shared/process/run-service";
import { createRouterBalanceReader } from "../../shared/chain/router-balances";
import { createProcessResources } from "../../shared/process/process-resources";
import { createSigner } from "../../shared/signer/create-signer";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations } from "../../shared/transfers/bid-reservations";
import { createInventoryReader, observeInventory } from "./inventory";
import { createApp } from "./app";
import { createChainQueues } from "./chain-queues";
import { createStatusReader } from "./status";
import { closeServer, listen, logListening } from "./listen";
import { createAdminOperations } from "./admin-operations";
import { createLedgerPool } from "../../shared/ledger/database";
import { readLatestReconciliation } from "../../shared/ledger/reconcile-reads";
import { readSwapRows } from "../../shared/ledger/swap-reads";
import { createLedgerReports } from "../../shared/ledger/ledger-reports";
import { swapViewOf } from "../../shared/protocol/ledger";

/**
 * Everything the admin process runs (main.ts wires it to runService): signer address, producer queues and one
 * provider per chain, a Redis connection, the operations (remove-liquidity, cancel-sender and the liquidity
 * routes: add-liquidity-for, migrate-liquidity, process-active-transactions), the status reader
 * and the HTTP server. `stop()` closes the server first (in-flight requests answer), then every resource.
 */
export async function startAdmin({ config, logger, observe, env }: ServiceContext): Promise<{ stop(): Promise<void> }> {
  const signer = createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl });
  const signerAddress = await signer.getAddress();
  // The TransactionManager credits the Router contract in router-contract mode, else the signer itself.
  const routerAddress = config.routerContractAddress ?? signerAddress;
  // Commands may wait for the first connect (a request can arrive before it): every use is bounded by a timeout
  // in the operation, so Redis down is still a fast 503.
  const resources = createProcessResources({ config, logger, service: "admin", redisKind: "request" });
  // The admin's queues are producers that refuse at once while Redis is away, with their QueueEvents (chain-queues.ts).
  const queues = createChainQueues(config, logger);
  resources.adopt("admin queues", queues.close);
  // Providers only connect on first use, so building one per chain up front costs nothing.
  const providers = new Map<number, ChainProvider>(
    Object.values(config.chainConfig).map((chain) => [chain.chainId, resources.requireProvider(chain.chainId)]),
  );
  const redis = resources.redis();
  const transfers = createTransferStore(redis, config.redisPrefix);
  const operations = createAdminOperations({
    config,
    logger,
    routerAddress,
    signerAddress,
    queues,
    redis,
    transfers,
    readProvider: resources.requireProvider,
    readUnlockedBalance: createRouterBalanceReader({ config, routerAddress, providers, logger }),
  });
  const inventory = createInventoryReader({
    config,
    balances: createBalanceStore(redis, config.redisPrefix),
    reservations: createBidReservations(redis, config.redisPrefix),
    transfers,
    providerOf: resources.requireProvider,
    logger,
  });
  if (observe) {
    observeHeartbeats(observe, config);
    observeInventory(observe, inventory);
  }
  // The books, read-only (every session of this pool is read-only): the admin never writes them.
  const ledgerPool = config.ledger
    ? createLedgerPool({ ledger: config.ledger, logger, mode: "reader", service: "admin" })
    : undefined;
  if (ledgerPool) resources.adopt("ledger database", () => ledgerPool.end());
  const app = createApp({
    config,
    logger,
    signerAddress,
    operations,
    status: createStatusReader({
      config,
      redis,
      queueFor: queues.queueFor,
      readReconciliation: ledgerPool ? () => readLatestReconciliation(ledgerPool) : undefined,
    }),
    inventory,
    dashboard: { queues: Object.values(config.chainConfig).map((chain) => queues.queueFor(chain.chainId)), redis },
    ledger: ledgerPool
      ? async (transactionId) =>
          swapViewOf({ transactionId, signer: signerAddress, ...(await readSwapRows(ledgerPool, transactionId)) })
      : undefined,
    ledgerReports: ledgerPool ? createLedgerReports(ledgerPool, signerAddress) : undefined,
  });
  const server = await listen(app, config.host, config.port).catch(async (err: unknown) => {
    await resources.close();
    throw err;
  });
  logListening(logger, config, env, signerAddress);
  return {
    stop: async () => {
      await closeServer(server);
      await resources.close();
    },
  };
}

import { runService, type ServiceContext } from "../../shared/process/run-service";
import { createRouterBalanceReader } from "../../shared/chain/router-balances";
import { createSigner } from "../../shared/signer/create-signer";
import { createApp } from "./app";
import { createChainQueues } from "./chain-queues";
import { AdminApiError } from "./errors";
import { closeServer, isLoopbackHost, listen } from "./listen";
import { createRemoveLiquidityOperation, DEFAULT_BROADCAST_TIMEOUT_MS } from "./operations/remove-liquidity";
import type { AdminOperations } from "./types";

async function start({ config, logger }: ServiceContext): Promise<{ stop(): Promise<void> }> {
  const signer = createSigner({ mnemonic: config.mnemonic, remoteSignerUrl: config.remoteSignerUrl });
  const signerAddress = await signer.getAddress();
  const queues = createChainQueues(config, logger);
  const operations: AdminOperations = {
    removeLiquidity: createRemoveLiquidityOperation({
      queueFor: queues.queueFor,
      queueEventsFor: queues.queueEventsFor,
      // The TransactionManager credits the Router contract in router-contract mode, else the signer itself.
      readUnlockedBalance: createRouterBalanceReader({
        config,
        routerAddress: config.routerContractAddress ?? signerAddress,
        logger,
      }),
      broadcastTimeoutMs: DEFAULT_BROADCAST_TIMEOUT_MS,
      logger,
    }),
    cancelSender: () =>
      Promise.reject(new AdminApiError("NOT_AVAILABLE", "cancel-sender is not available in this version")),
  };
  const app = createApp({ config, logger, signerAddress, operations });
  const server = await listen(app, config.host, config.port).catch(async (err: unknown) => {
    await queues.close();
    throw err;
  });
  logger.info("admin API listening", { at: "admin.listen", host: config.host, port: config.port, signerAddress });
  if (!isLoopbackHost(config.host)) {
    logger.warn(
      "ADMIN API IS BOUND TO A NON-LOOPBACK ADDRESS: it must never be reachable from the internet (router-spec §1); " +
        "bind host 127.0.0.1 or keep it strictly inside a private network",
      { at: "admin.listen", host: config.host, port: config.port },
    );
  }
  return {
    stop: async () => {
      await closeServer(server);
      await queues.close();
    },
  };
}

void runService({ service: "admin", start });

import { Queue } from "bullmq";
import { createChainProvider, type ChainProvider, type ChainProviderOptions } from "../../shared/chain/chain-provider";
import type { RouterConfig } from "../../shared/config/types";
import { errorMessage } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import { txQueueName, workerConnection } from "../../shared/queues";

export interface ChainHandles {
  readProvider(chainId: number): ChainProvider | undefined;
  txQueue(chainId: number): Queue | undefined;
  /** Destroys the providers and closes the queues built here (not the own chain's, which the caller owns). */
  close(): Promise<void>;
}

export interface ChainHandlesParams {
  readonly config: RouterConfig;
  /** The submitter's own chain, whose provider and queue already exist. */
  readonly chainId: number;
  readonly ownProvider: ChainProvider;
  readonly ownQueue: Queue;
  readonly logger: Logger;
  readonly providerOptions?: Pick<ChainProviderOptions, "maxLagBlocks" | "headRefreshMs" | "requestTimeoutMs">;
}

/**
 * Read providers and queue producers for the other configured chains, built on first use (most jobs need
 * none, and a chain whose RPC is down must not stop this chain's submitter from starting). They only read
 * and enqueue: sending stays with each chain's own submitter and its nonce sequence.
 */
export function createChainHandles(params: ChainHandlesParams): ChainHandles {
  const { config, logger } = params;
  const providers = new Map<number, ChainProvider>([[params.chainId, params.ownProvider]]);
  const queues = new Map<number, Queue>([[params.chainId, params.ownQueue]]);
  const configured = (chainId: number): boolean =>
    Object.prototype.hasOwnProperty.call(config.chainConfig, String(chainId));
  return {
    readProvider: (chainId) => {
      if (!configured(chainId)) {
        return undefined;
      }
      let provider = providers.get(chainId);
      if (!provider) {
        const chain = config.chainConfig[String(chainId)];
        provider = createChainProvider({ chainId, urls: chain.providers, logger, ...params.providerOptions });
        providers.set(chainId, provider);
      }
      return provider;
    },
    txQueue: (chainId) => {
      if (!configured(chainId)) {
        return undefined;
      }
      let queue = queues.get(chainId);
      if (!queue) {
        queue = new Queue(txQueueName(chainId), {
          connection: workerConnection(config.redis),
          prefix: config.redisPrefix,
        });
        queue.on("error", (err) =>
          logger.error("queue error", { at: "submitter.queue", queue: txQueueName(chainId), error: errorMessage(err) }),
        );
        queues.set(chainId, queue);
      }
      return queue;
    },
    close: async () => {
      for (const [chainId, provider] of providers) {
        if (chainId !== params.chainId) {
          provider.destroy();
        }
      }
      const others = [...queues.entries()].filter(([chainId]) => chainId !== params.chainId).map(([, queue]) => queue);
      await Promise.allSettled(others.map((queue) => queue.close()));
    },
  };
}

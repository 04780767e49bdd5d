import { Queue, QueueEvents } from "bullmq";
import type { RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import { producerConnection, txQueueName } from "../../shared/queues";
import { withTimeout } from "../../shared/timing";

/** Concurrent admin requests each listen on the shared QueueEvents; the default cap of 10 would warn. */
const MAX_EVENT_LISTENERS = 200;
/** Keeps stop() well inside the shutdown budget of runService even when Redis is unreachable. */
const CLOSE_TIMEOUT_MS = 3_000;

export interface ChainQueues {
  queueFor(chainId: number): Queue;
  queueEventsFor(chainId: number): QueueEvents;
  close(): Promise<void>;
}

/**
 * One transaction Queue and one QueueEvents per configured chain, as a producer: Redis being down makes
 * requests fail fast (503) instead of hanging. Nothing here waits for Redis, so the API (and /ping)
 * starts even while Redis is unreachable.
 */
export function createChainQueues(config: RouterConfig, logger: Logger): ChainQueues {
  const queues = new Map<number, Queue>();
  const events = new Map<number, QueueEvents>();
  for (const chain of Object.values(config.chainConfig)) {
    const name = txQueueName(chain.chainId);
    const queue = new Queue(name, { connection: producerConnection(config.redis), prefix: config.redisPrefix });
    // BullMQ forces maxRetriesPerRequest to null on its blocking reader anyway; saying so avoids its warning.
    const queueEvents = new QueueEvents(name, {
      connection: { ...producerConnection(config.redis), maxRetriesPerRequest: null },
      prefix: config.redisPrefix,
    });
    queueEvents.setMaxListeners(MAX_EVENT_LISTENERS);
    queue.on("error", throttledErrorLog(logger, "queue error", { at: "admin.queue", queue: name }));
    queueEvents.on("error", throttledErrorLog(logger, "queue events error", { at: "admin.queue", queue: name }));
    queues.set(chain.chainId, queue);
    events.set(chain.chainId, queueEvents);
  }
  return {
    queueFor: (chainId) => lookup(queues, chainId),
    queueEventsFor: (chainId) => lookup(events, chainId),
    close: async () => {
      const all = [...events.values(), ...queues.values()];
      const results = await Promise.allSettled(all.map((c) => withTimeout(c.close(), CLOSE_TIMEOUT_MS)));
      const failed = results.filter((r) => r.status === "rejected").length;
      if (failed > 0) {
        // With Redis down BullMQ's close() rejects or waits for a reconnect; the process exits anyway.
        logger.warn("some queue connections did not close cleanly", { at: "admin.queue", failed });
      }
    },
  };
}

function lookup<T>(map: ReadonlyMap<number, T>, chainId: number): T {
  const found = map.get(chainId);
  if (!found) {
    // The route checks chainConfig first, so reaching this is a wiring bug, not a client error.
    throw new Error(`no transaction queue for chain ${chainId}`);
  }
  return found;
}

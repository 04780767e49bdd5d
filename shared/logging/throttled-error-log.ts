import { errorMessage } from "../errors";
import type { Logger } from "./create-logger";

/** ioredis and BullMQ report every failed reconnect, several a second: one line per distinct error per window. */
export const CONNECTION_ERROR_LOG_WINDOW_MS = 60_000;

/**
 * An `error` listener for Redis clients, queues and workers that logs the first occurrence of an error and
 * then at most once per window while it repeats, with how many repeats it swallowed. A new error message
 * is logged at once.
 */
export function throttledErrorLog(
  logger: Logger,
  message: string,
  fields: Record<string, unknown>,
  windowMs: number = CONNECTION_ERROR_LOG_WINDOW_MS,
): (err: Error) => void {
  let lastMessage: string | undefined;
  let lastAtMs = 0;
  let suppressed = 0;
  return (err) => {
    const now = Date.now();
    if (err.message === lastMessage && now - lastAtMs < windowMs) {
      suppressed += 1;
      return;
    }
    logger.error(message, { ...fields, error: errorMessage(err), suppressedRepeats: suppressed });
    lastMessage = err.message;
    lastAtMs = now;
    suppressed = 0;
  };
}

/** A line that repeats under a key (a refusal code, a topic): see keyedThrottledLog. */
export type KeyedThrottledLog = (
  level: "debug" | "info" | "warn" | "error",
  key: string,
  message: string,
  fields: Record<string, unknown>,
) => void;

/**
 * For lines anyone can make the router write (a requester's refusals): the first line of a key is logged, then at
 * most one per window while the key repeats, with how many it swallowed (`suppressedRepeats`). Metrics count
 * every occurrence; the log only has to show that it happens. Keys must come from a closed set (codes, topics).
 */
export function keyedThrottledLog(
  logger: Logger,
  windowMs: number = CONNECTION_ERROR_LOG_WINDOW_MS,
): KeyedThrottledLog {
  const lastByKey = new Map<string, { atMs: number; suppressed: number }>();
  return (level, key, message, fields) => {
    const now = Date.now();
    const last = lastByKey.get(key);
    if (last && now - last.atMs < windowMs) {
      last.suppressed += 1;
      return;
    }
    logger[level](message, { ...fields, suppressedRepeats: last?.suppressed ?? 0 });
    lastByKey.set(key, { atMs: now, suppressed: 0 });
  };
}

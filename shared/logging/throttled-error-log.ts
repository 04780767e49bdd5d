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

import type { Logger } from "../logging/create-logger";
import { throttledErrorLog } from "../logging/throttled-error-log";

/**
 * Holds the bearer token the NATS authenticator hands out. The authenticator runs synchronously inside the
 * client's CONNECT, so it can only read what is here; fetching happens beside it: once before the first
 * connect, and again after every disconnect so the next CONNECT carries a token from a fresh login.
 */
export interface TokenKeeper {
  /** The latest token; synchronous, for the NATS authenticator. Empty before `init`. */
  current(): string;
  /** First login; throws (MessagingAuthError) so a process that cannot log in does not start. */
  init(): Promise<void>;
  /** The connection dropped: the token must be fetched again before it counts as fresh. */
  invalidate(): void;
  /** Fetches a token unless one was fetched since the last `invalidate`; never rejects (failures are logged). */
  ensureFresh(): Promise<void>;
}

export interface CreateTokenKeeperParams {
  readonly fetchToken: () => Promise<string>;
  readonly logger: Logger;
  /** Failed refreshes repeat at every reconnect attempt; one line per window. */
  readonly errorLogWindowMs?: number;
}

export function createTokenKeeper(params: CreateTokenKeeperParams): TokenKeeper {
  let token = "";
  let fresh = false;
  // Bumped by every disconnect: a fetch that started before the latest disconnect does not count as fresh.
  let generation = 0;
  let inFlight: Promise<void> | undefined;
  const logFailure = throttledErrorLog(
    params.logger,
    "messaging token refresh failed; keeping the previous token and retrying at the next reconnect attempt",
    { at: "messaging.auth" },
    params.errorLogWindowMs,
  );

  const refresh = async (): Promise<void> => {
    const startedGeneration = generation;
    try {
      token = await params.fetchToken();
      fresh = startedGeneration === generation;
      params.logger.info("messaging token refreshed", { at: "messaging.auth" });
    } catch (err) {
      logFailure(err instanceof Error ? err : new Error(String(err)));
    } finally {
      inFlight = undefined;
    }
  };

  return {
    current: () => token,
    init: async () => {
      token = await params.fetchToken();
      fresh = true;
    },
    invalidate: () => {
      fresh = false;
      generation += 1;
    },
    ensureFresh: () => {
      if (fresh) {
        return Promise.resolve();
      }
      inFlight ??= refresh();
      return inFlight;
    },
  };
}

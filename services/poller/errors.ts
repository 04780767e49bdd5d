import { RouterError } from "../../shared/errors";

/** The poller's own settings (CHAIN_ID, POLLER_* env) are missing or invalid: it refuses to start. */
export class PollerConfigError extends RouterError {
  readonly code = "POLLER_CONFIG_INVALID";
  readonly retriable = false;
}

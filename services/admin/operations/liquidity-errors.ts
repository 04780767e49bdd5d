import { RouterError } from "../../../shared/errors";

/** The asset is in no swap pool on the chain: liquidity there would never be used. */
export class AssetNotInPoolError extends RouterError {
  readonly code = "ASSET_NOT_IN_POOL";
  readonly retriable = false;
}

/** The chain still has open transfers: migrate after clean-up mode has drained them (docs/admin-api.md). */
export class OpenTransfersError extends RouterError {
  readonly code = "OPEN_TRANSFERS";
  readonly retriable = false;
}

/**
 * migrate-liquidity moves the signer's own (direct-mode) liquidity: in router-contract mode the Router contract's
 * withdrawal pays its recipient, not the wallet the add would spend from.
 */
export class MigrationNeedsDirectModeError extends RouterError {
  readonly code = "MIGRATION_NEEDS_DIRECT_MODE";
  readonly retriable = false;
}

/**
 * The router is not in clean-up mode: it may still bid, so a new transfer could need the liquidity between the
 * open-transfer check and the withdrawal.
 */
export class CleanUpModeOffError extends RouterError {
  readonly code = "CLEAN_UP_MODE_OFF";
  readonly retriable = false;
}

/** The router has no unlocked liquidity of the asset on the chain: nothing to move. */
export class NothingToMigrateError extends RouterError {
  readonly code = "NOTHING_TO_MIGRATE";
  readonly retriable = false;
}

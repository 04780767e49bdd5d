import { RouterError, errorClass } from "../../../shared/errors";

/** The asset is in no swap pool on the chain: liquidity there would never be used. */
export class AssetNotInPoolError extends errorClass(RouterError, "ASSET_NOT_IN_POOL", "terminal") {}

/** The chain still has open transfers: migrate after clean-up mode has drained them (docs/admin-api.md). */
export class OpenTransfersError extends errorClass(RouterError, "OPEN_TRANSFERS", "terminal") {}

/**
 * migrate-liquidity moves the signer's own (direct-mode) liquidity: in router-contract mode the Router contract's
 * withdrawal pays its recipient, not the wallet the add would spend from.
 */
export class MigrationNeedsDirectModeError extends errorClass(RouterError, "MIGRATION_NEEDS_DIRECT_MODE", "terminal") {}

/**
 * The router is not in clean-up mode: it may still bid, so a new transfer could need the liquidity between the
 * open-transfer check and the withdrawal.
 */
export class CleanUpModeOffError extends errorClass(RouterError, "CLEAN_UP_MODE_OFF", "terminal") {}

/** The router has no unlocked liquidity of the asset on the chain: nothing to move. */
export class NothingToMigrateError extends errorClass(RouterError, "NOTHING_TO_MIGRATE", "terminal") {}

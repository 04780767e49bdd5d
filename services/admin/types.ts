/**
 * What the admin routes hand to operations: already validated, addresses checksummed, chain configured.
 * Kept apart from app.ts so operations never import Express.
 */
export interface RemoveLiquidityRequest {
  readonly chainId: number;
  /** Checksummed; the zero address is the native asset. */
  readonly assetId: string;
  /** Base units, decimal integer string without leading zeros, > 0. */
  readonly amount: string;
  /** Checksummed, never the zero address. */
  readonly recipientAddress: string;
}

export interface CancelSenderRequest {
  readonly senderChainId: number;
  /** 0x + 64 lower-case hex digits. */
  readonly transactionId: string;
  /** Checksummed. */
  readonly user: string;
  /** Cancel even while the receiving side is prepared (the operator accepts the loss). */
  readonly force: boolean;
}

export interface AddLiquidityForRequest {
  readonly chainId: number;
  /** Checksummed; the zero address is the native asset. */
  readonly assetId: string;
  /** Base units, decimal integer string without leading zeros, > 0. */
  readonly amount: string;
  /** Checksummed; absent: the router itself (the Router contract in router-contract mode, else the signer). */
  readonly routerAddress?: string;
}

export interface MigrateLiquidityRequest {
  readonly chainId: number;
  /** Checksummed, never the zero address. */
  readonly newRouterAddress: string;
  /** Checksummed, distinct; absent: the swap-pool assets of the chain. */
  readonly assets?: readonly string[];
}

/** One asset of a migration: both transaction hashes (the original's keys), or why this asset was not moved. */
export interface MigrateLiquidityEntry {
  readonly assetId: string;
  /** The unlocked amount moved, base units. */
  readonly amount?: string;
  readonly removeLiquidityTx?: string;
  readonly addLiquidityForTx?: string;
  /** Any thrown value; the route turns it into `error`/`message` through the one code-to-status table. */
  readonly failure?: unknown;
}

/** One open transfer side the pollers are asked to handle again. */
export interface ActiveTransaction {
  readonly chainId: number;
  readonly transactionId: string;
  readonly user: string;
  readonly sendingChainId: number;
  readonly receivingChainId: number;
  readonly amount: string;
  readonly expiry: number;
  readonly status: string;
}

export interface OperationContext {
  /** The request's id (X-Request-Id or generated); also the idempotency key of any job it enqueues. */
  readonly requestId: string;
}

export interface TransactionResponse {
  readonly transactionHash: string;
}

export interface AdminOperations {
  removeLiquidity(params: RemoveLiquidityRequest, ctx: OperationContext): Promise<TransactionResponse>;
  cancelSender(params: CancelSenderRequest, ctx: OperationContext): Promise<TransactionResponse>;
  /** The liquidity routes (docs/admin-api.md); each route is absent without its operation. */
  addLiquidityFor?(params: AddLiquidityForRequest, ctx: OperationContext): Promise<TransactionResponse>;
  migrateLiquidity?(params: MigrateLiquidityRequest, ctx: OperationContext): Promise<MigrateLiquidityEntry[]>;
  processActiveTransactions?(ctx: OperationContext): Promise<ActiveTransaction[]>;
}

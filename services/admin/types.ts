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
}

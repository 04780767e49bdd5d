import type { TransferRecord } from "../../../shared/protocol/types";

/** A change of the router's unlocked liquidity that was not caused by a transfer (LiquidityAdded / Removed). */
export interface LiquidityEvent {
  readonly kind: "added" | "removed";
  /** Checksummed. */
  readonly assetId: string;
  /** Base units, decimal string. */
  readonly amount: string;
  readonly blockNumber: number;
  readonly transactionHash: string;
}

/** What a source observed, to be stored before the source may move past it. */
export interface SourceBatch {
  /** At most one record per transfer, each in the TransferRecord shape both sources share. */
  readonly records: readonly TransferRecord[];
  readonly liquidityEvents: readonly LiquidityEvent[];
}

export interface SyncParams {
  /** The chain head (eth_blockNumber) this tick works at. */
  readonly head: number;
  /**
   * `head - confirmations + 1`: sources report only changes in blocks up to here. A record in the store is
   * therefore always confirmed, and a re-org shallower than `confirmations` never reaches the store (a
   * record from a block that was re-orged away could otherwise sit Prepared in the store and pass the
   * confirmation check later).
   */
  readonly confirmedHead: number;
  readonly signal: AbortSignal;
  /** Stores a batch; a source advances its cursor only after this resolved (crash in between = re-read). */
  sink(batch: SourceBatch): Promise<void>;
}

export interface SyncResult {
  /** Every change of the router's transfers on this chain up to this block is in the store now. */
  readonly syncedBlock: number;
}

/** Where a poller learns about the router's transfers on its chain: TransactionManager logs or a subgraph. */
export interface TransferSource {
  readonly name: "logs" | "subgraph";
  /** Whether this source may be used at `head` now (a subgraph must be within the sync buffer). */
  isUsable(head: number): Promise<boolean>;
  /** Pulls every change since the last sync into `sink`, up to the confirmed head. */
  sync(params: SyncParams): Promise<SyncResult>;
}

/** Thrown between ranges when the tick is aborted, so no half-done range is reported as synced. */
export class SyncAbortedError extends Error {
  constructor() {
    super("sync aborted");
    this.name = "SyncAbortedError";
  }
}

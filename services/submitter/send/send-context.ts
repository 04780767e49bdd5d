import type { ChainProvider } from "../../../shared/chain/chain-provider";
import type { ChainConfig } from "../../../shared/config/types";
import type { Logger } from "../../../shared/logging/create-logger";
import type { LedgerProducer } from "../../../shared/process/ledger-producer";
import type { LedgerTxKind } from "../../../shared/queues";
import type { Fee } from "../../../shared/protocol/gas";
import type { RouterSigner } from "../../../shared/signer/router-signer";
import type { NonceStore } from "./nonce-store";
import type { TxRecordStore } from "./tx-record";

/** What the send pipeline needs from the process: built once per submitter, shared by every job. */
export interface SendContext {
  readonly chain: ChainConfig;
  readonly chainId: number;
  /** The signer's checksummed address: the sender of every transaction. */
  readonly from: string;
  readonly provider: ChainProvider;
  readonly signer: Pick<RouterSigner, "signTransaction">;
  readonly records: TxRecordStore;
  readonly nonces: NonceStore;
  /** Price for a new transaction and the network floor for a bump (shared/chain/gas-price.ts). */
  readonly gasPrice: () => Promise<Fee>;
  readonly logger: Logger;
  /** Receipt and head polling interval while waiting for mining and confirmations. */
  readonly pollIntervalMs: number;
  /** Aborted when the process shuts down: the job stops at a safe point and goes back to the queue. */
  readonly signal: AbortSignal;
  /**
   * Runs a fresh nonce's allocate → sign → persist → broadcast alone (an in-process mutex): jobs run
   * concurrently, but nonces are handed out and broadcast in order. Absent: run as is (one job at a time).
   */
  readonly sendSlot?: <T>(fn: () => Promise<T>) => Promise<T>;
  /**
   * With `redis.minReplicas` > 0: resolves once that many replicas hold every write the broadcast relies on (its
   * record, the nonce, the transfer decision, the liquidity hold, the lease term), throws ReplicaAckTimeoutError
   * otherwise. Called right before every broadcast; set per job by the processor; absent when minReplicas is 0.
   */
  readonly replicated?: () => Promise<void>;
  /**
   * Outside a job (the nonce-gap filler): takes the replica mark now, before the writes, and returns the wait for
   * them, like the processor does per job. Absent when minReplicas is 0.
   */
  readonly markReplication?: () => () => Promise<void>;
  /** The sender lease: checked right before every broadcast (record and nonce writes check it in Redis). */
  readonly lease?: { assertHeld(): void };
  /**
   * The ledger queue's producer when the config has a `ledger` section: every transaction of a job seen mined
   * (confirmed, or reverted: it cost gas) is named to it before the job ends (name-mined.ts). Absent: none is.
   */
  readonly ledger?: LedgerProducer;
  /** Named points of the pipeline for fault tests (test/fault), injected by startSubmitter's caller; none in production. */
  readonly hooks?: SendHooks;
}

/** The pipeline's crash points, in the order a job meets them. */
export type SendHookPoint =
  | "before-persist"
  | "after-persist"
  | "after-broadcast"
  | "bump-persisted"
  | "confirmations-wait"
  | "after-confirmed-saved";

export interface SendHooks {
  at(point: SendHookPoint, detail: { readonly jobId: string; readonly nonce?: number }): Promise<void> | void;
}

/** Filled in as the pipeline goes, so the job's outcome line can name nonce, hash and bumps even on failure. */
export interface SendTrace {
  nonce?: number;
  transactionHash?: string;
  bumps?: number;
  /** One of the job's transactions was seen mined with status 1: the job must never be reported failed. */
  minedOk?: boolean;
}

/** The job, as far as the pipeline is concerned. */
export interface SendJob {
  readonly jobId: string;
  readonly jobName: string;
  readonly dataHash: string;
  /** The expiry of the transfer the job acts on (jobs.ts transferExpiryOf): how long its finished record is kept. */
  readonly transferExpirySec?: number;
  /** Called right after every successful broadcast: the admin API answers its HTTP request on this. */
  reportBroadcast(transactionHash: string, nonce: number): Promise<void>;
  readonly trace: SendTrace;
  /**
   * The contract reverts a second execution of the job's call (the lifecycle operations: #P:015, #F:019,
   * #C:019), so a transaction rebuilt at a new nonce cannot act twice. Absent or false (remove-liquidity):
   * a nonce that looks taken must be proven so before anything is rebuilt (confirm-nonce-taken.ts).
   */
  readonly replayProtected?: boolean;
  /**
   * Called when one of the job's transactions is seen mined (balances read from that block on show its effect),
   * with the receipt's block and status; again after a re-org re-mines it.
   */
  onMined?(receipt: { readonly blockNumber: number; readonly status: number | null }): Promise<void>;
  /** What the ledger books the job's mined transaction as (name-mined.ts); a job without it is not named. */
  readonly ledgerEntry?: LedgerEntry;
  /** Called before the job's call is rebuilt at a new nonce (its old nonce was taken by another transaction). */
  onRebuild?(): Promise<void>;
}

/** The job's side of a `book-transaction` job (shared/queues/ledger-jobs.ts): why the signer sent it. */
export interface LedgerEntry {
  readonly kind: LedgerTxKind;
  readonly transactionId?: string;
  readonly requestId?: string;
}

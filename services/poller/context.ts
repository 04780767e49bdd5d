import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../shared/chain/chain-provider";
import type { RouterBalanceReader } from "../../shared/chain/router-balances";
import type { ChainConfig, RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import type { LedgerProducer } from "../../shared/process/ledger-producer";
import type { TxJobData, TxJobResult } from "../../shared/queues";
import type { FenceSource } from "../../shared/coordination/lease";
import type { BalanceStore } from "../../shared/transfers/balance-store";
import type { BidReservations } from "../../shared/transfers/bid-reservations";
import type { TransferStore } from "../../shared/transfers/transfer-store";
import type { AlertOnce } from "./alert-once";
import type { ReconcileSchedule } from "./reconcile-schedule";
import type { SourceSelector } from "./source-selector";

export type TxQueue = Queue<TxJobData, TxJobResult, string>;

/** Everything a tick needs, built once per process by startPoller. */
export interface PollerContext {
  readonly config: RouterConfig;
  readonly chainId: number;
  readonly chain: ChainConfig;
  readonly logger: Logger;
  readonly provider: ChainProvider;
  readonly redis: Redis;
  readonly store: TransferStore;
  readonly balances: BalanceStore;
  /** The transaction queue of a configured chain (a job goes to the chain it is sent on). */
  queueFor(chainId: number): TxQueue;
  readonly alertOnce: AlertOnce;
  readonly sources: SourceSelector;
  readonly routerAddress: string;
  readonly signerAddress: string;
  readonly tolerancePercent: number;
  readonly readRouterBalance: RouterBalanceReader;
  /** Pool assets of this chain, checksummed: the balances the poller keeps fresh in Redis. */
  readonly poolAssets: readonly string[];
  readonly balanceEveryTicks: number;
  /** Balances are also refreshed whenever the stored ones are older than this (the auction refuses stale ones). */
  readonly balanceMaxIntervalMs: number;
  /** The auction's liquidity reservations: pinned when our sending-side prepare shows up, released after the receiving one. */
  readonly reservations: BidReservations;
  /** A receiving chain whose poller has not refreshed its head for this long counts as stale. */
  readonly receivingStaleMs: number;
  /** This chain's provider, or another configured chain's (built on first use): the reconcile reads both sides. */
  providerFor(chainId: number): ChainProvider;
  readonly reconcile: ReconcileSchedule;
  /** Blocks per eth_getLogs, also for the reconcile's log lookups. */
  readonly maxRangeBlocks: number;
  /** How far back the reconcile looks for a side the store has never seen. */
  readonly reconcileSearchBlocks: number;
  /**
   * The chain's poller lease (undefined: not held now). The stores check it atomically with every write; the
   * decide step checks it before each record, since enqueues are not fenced (poller-lease.ts, docs/poller.md).
   */
  readonly fence: FenceSource;
  /**
   * The ledger queue's producer when the config has a `ledger` section: every TransactionManager event of this
   * router read is named to it before it is stored (ledger-naming.ts). Absent: none is.
   */
  readonly ledger?: LedgerProducer;
}

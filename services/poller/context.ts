import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../shared/chain/chain-provider";
import type { RouterBalanceReader } from "../../shared/chain/router-balances";
import type { ChainConfig, RouterConfig } from "../../shared/config/types";
import type { Logger } from "../../shared/logging/create-logger";
import type { TxJobData, TxJobResult } from "../../shared/queues";
import type { BalanceStore } from "../../shared/transfers/balance-store";
import type { TransferStore } from "../../shared/transfers/transfer-store";
import type { AlertOnce } from "./alert-once";
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
  /** A receiving chain whose poller has not refreshed its head for this long counts as stale. */
  readonly receivingStaleMs: number;
}

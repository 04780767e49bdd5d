import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../shared/chain/chain-provider";
import type { RouterConfig } from "../../shared/config/types";
import type { ReplicationGuard } from "../../shared/coordination/replication";
import type { RouterSigner } from "../../shared/signer/router-signer";
import type { JobLiquidity, LiquidityHolds } from "./liquidity-in-flight";
import type { SendContext } from "./send/send-context";

/** Everything a job needs, built once per process by startSubmitter (never per job). */
export interface SubmitterContext extends SendContext {
  readonly config: RouterConfig;
  readonly signer: RouterSigner;
  /**
   * Read-only provider of any configured chain (this chain's own provider for `chainId`), built on first
   * use: a receiving prepare proves the sending side on the sending chain, a sender cancel reads the
   * receiving chain. Undefined for a chain not in chainConfig.
   */
  readonly readProvider: (chainId: number) => ChainProvider | undefined;
  /** Producer handle of a configured chain's tx queue (follow-up jobs, in-flight checks); built on first use. */
  readonly txQueue: (chainId: number) => Queue | undefined;
  /** Plain Redis connection (other chains' transaction records). */
  readonly redis: Redis;
  /**
   * Replica acknowledgements on `redis`, the connection every record, nonce, hold and decision write goes
   * through (redis.minReplicas); undefined when minReplicas is 0. The processor turns it into `replicated`.
   */
  readonly replication?: ReplicationGuard;
  /** Liquidity held in Redis by the chain's sent-but-unmined prepares and withdrawals (liquidity-in-flight.ts). */
  readonly liquidityHolds?: LiquidityHolds;
  /** The running job's own view of it, set per job by the processor. */
  readonly liquidity?: JobLiquidity;
  /**
   * A job stalled more often than this (its process died or lost the BullMQ lock each time) fails, unless it has
   * a transaction that may be on chain: then it keeps running (job/admit-job.ts). BullMQ's own stall limit is off.
   */
  readonly maxStalledCount?: number;
  /**
   * A job that met its sender lease lapsed asks whether the term it started in holds the lease again (resumed after
   * an event-loop stall: lease/lease-keeper.ts heldAgain): then it runs again here instead of being handed back.
   */
  readonly leaseHeldAgain?: (signal: AbortSignal) => Promise<boolean>;
}

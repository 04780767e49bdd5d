import type { JobsOptions } from "bullmq";
import { TX_JOB_DEFAULTS } from "./connection";
import { TX_JOB, type TxJobName } from "./jobs";

/**
 * BullMQ priorities of the transaction queues (1 runs first): claims of the router's own funds before the
 * prepares and relays users wait on, then refunds and returns of liquidity, then admin withdrawals and deposits. A stuck
 * prepare can no longer sit in front of a time-critical claim.
 */
export const TX_JOB_PRIORITY: Readonly<Record<TxJobName, number>> = {
  [TX_JOB.fulfillSender]: 1,
  [TX_JOB.prepareReceiver]: 2,
  [TX_JOB.relayFulfill]: 2,
  [TX_JOB.cancelSender]: 3,
  [TX_JOB.cancelReceiver]: 3,
  [TX_JOB.removeLiquidity]: 4,
  [TX_JOB.addLiquidityFor]: 4,
};

/** The options every producer adds a transaction job with: retention, retries, its deterministic id and priority. */
export function txJobOptions(name: TxJobName, jobId: string): JobsOptions {
  return { ...TX_JOB_DEFAULTS, jobId, priority: TX_JOB_PRIORITY[name] };
}

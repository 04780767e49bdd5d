import {
  TX_JOB,
  type AddLiquidityForJobData,
  type CancelReceiverJobData,
  type CancelSenderJobData,
  type FulfillSenderJobData,
  type PrepareReceiverJobData,
  type RelayFulfillJobData,
  type RemoveLiquidityJobData,
} from "../../../shared/queues";
import type { SubmitterContext } from "../context";
import { buildAddLiquidityForCall } from "../operations/add-liquidity-for";
import { buildCancelReceiverCall } from "../operations/cancel-receiver";
import { buildCancelSenderCall } from "../operations/cancel-sender";
import { buildFulfillSenderCall } from "../operations/fulfill-sender";
import { buildPrepareReceiverCall } from "../operations/prepare-receiver";
import { buildRelayFulfillCall } from "../operations/relay-fulfill";
import { buildRemoveLiquidityCall } from "../operations/remove-liquidity";
import { InvalidTxJobError } from "../send/errors";
import type { TxCall, TxNoop } from "../send/tx-record";
import type { TxJob } from "./tx-job";

/** The job's call, built by the operation its name picks (or a no-op when its effect is already on chain). */
export function buildJobCall(ctx: SubmitterContext, job: TxJob, jobId: string): Promise<TxCall | TxNoop> {
  const { name, data } = job;
  switch (name) {
    case TX_JOB.removeLiquidity:
      return buildRemoveLiquidityCall(ctx, data as RemoveLiquidityJobData, job.timestamp);
    case TX_JOB.prepareReceiver:
      return buildPrepareReceiverCall(ctx, data as PrepareReceiverJobData);
    case TX_JOB.fulfillSender:
      return buildFulfillSenderCall(ctx, data as FulfillSenderJobData);
    case TX_JOB.cancelSender:
      return buildCancelSenderCall(ctx, data as CancelSenderJobData);
    case TX_JOB.cancelReceiver:
      return buildCancelReceiverCall(ctx, data as CancelReceiverJobData);
    case TX_JOB.relayFulfill:
      return buildRelayFulfillCall(ctx, data as RelayFulfillJobData);
    case TX_JOB.addLiquidityFor:
      return buildAddLiquidityForCall(ctx, jobId, data as AddLiquidityForJobData);
    default:
      throw new InvalidTxJobError(`no operation for job name ${JSON.stringify(name)}`);
  }
}

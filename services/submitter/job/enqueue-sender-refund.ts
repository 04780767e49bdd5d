import { errorMessage } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import {
  TX_JOB,
  txJobOptions,
  transferKey,
  txJobId,
  type CancelSenderJobData,
  type PrepareReceiverJobData,
} from "../../../shared/queues";
import type { SubmitterContext } from "../context";

/**
 * The one place a refused or reverted receiving prepare turns into a refund (docs/protocol.md#transfer-actions): a cancel-sender
 * job on the sending chain's queue under the transfer's deterministic id, so it is enqueued at most once.
 * Safe by construction: that job re-checks every sender-cancel rule on chain before it sends. A failure to
 * enqueue is logged, not thrown: the transfer still ends in a refund at the sender's expiry.
 */
export async function enqueueSenderRefund(
  ctx: SubmitterContext,
  data: PrepareReceiverJobData,
  code: string,
  logger: Logger,
): Promise<void> {
  const { txData } = data.sender;
  const refundJobId = txJobId(TX_JOB.cancelSender, transferKey(txData.transactionId, txData.user));
  const fields = {
    at: "submitter.refund",
    refundJobId,
    sendingChainId: txData.sendingChainId,
    transactionId: txData.transactionId,
    code,
  };
  const queue = ctx.txQueue(txData.sendingChainId);
  if (!queue) {
    logger.error("cannot enqueue the sender cancel: the sending chain has no queue in this config", fields);
    return;
  }
  const refund: CancelSenderJobData = {
    chainId: txData.sendingChainId,
    txData,
    reason: code,
    force: false,
    afterOwnRefusal: true,
  };
  try {
    // An existing job under this id (any state) is kept as it is: BullMQ ignores the add.
    await queue.add(TX_JOB.cancelSender, refund, txJobOptions(TX_JOB.cancelSender, refundJobId));
    logger.info("receiving prepare refused or reverted: sender cancel enqueued", fields);
  } catch (enqueueErr) {
    logger.error("could not enqueue the sender cancel", { ...fields, error: errorMessage(enqueueErr) });
  }
}

import { isTransactionExpired } from "../../../shared/protocol/expiry";
import type { TransactionData } from "../../../shared/protocol/types";
import { checkUserFulfillSignature } from "../../../shared/protocol/user-signatures";
import type { FulfillSenderJobData } from "../../../shared/queues";
import type { TxCall, TxNoop } from "../send/tx-record";
import { InvalidUserSignatureError, SenderExpiredError } from "./errors";
import { buildUnlessCompleted, openPreparedSide, revertCodeOf, type LifecycleContext } from "./lifecycle";

/**
 * The router's claim on the sending chain (docs/protocol.md#transfer-actions, ReceiverFulfilled), with the user's
 * fulfill signature from the receiving-side fulfill:
 * 1. the signature must recover to `txData.user` for the payload the sending chain checks (the transfer's
 *    receiving chain id and receiving TransactionManager), or the contract reverts #F:022 anyway;
 * 2. sanitation here: completed → no-op; not prepared / other variant → terminal; expired (latest block
 *    after expiry) → terminal SENDER_EXPIRED with an alert: the router lost its claim window;
 * 3. fulfill({txData, relayerFee, signature, callData, 0x}), or Router.fulfill in router-contract mode.
 *    `#F:019` after sanitation said prepared means it was completed meanwhile: re-check → no-op.
 */
export async function buildFulfillSenderCall(
  ctx: LifecycleContext,
  data: FulfillSenderJobData,
): Promise<TxCall | TxNoop> {
  const { txData } = data;
  assertUserFulfillSignature(txData, data.relayerFee, data.signature);
  const opened = await openPreparedSide(ctx, txData, "sending");
  if ("noop" in opened) {
    return opened.noop;
  }
  const { state } = opened;
  if (isTransactionExpired(txData.expiry, state.nowSec)) {
    throw senderExpired(ctx, data, state.nowSec);
  }

  try {
    return await buildUnlessCompleted(ctx, "fulfill", {
      txData,
      relayerFee: data.relayerFee,
      signature: data.signature,
      callData: data.callData,
      encodedMeta: "0x",
    });
  } catch (err) {
    if (revertCodeOf(err) === "F:020") {
      throw senderExpired(ctx, data, state.nowSec);
    }
    throw err;
  }
}

/**
 * The user's fulfill signature must recover to `txData.user` for this relayer fee, or the contract reverts
 * #F:022 anyway. Shared by the sending-side claim and the relayed receiving-side fulfill (relay-fulfill).
 */
export function assertUserFulfillSignature(txData: TransactionData, relayerFee: string, signature: string): void {
  const check = checkUserFulfillSignature({ txData, relayerFee, signature });
  if (check.ok) {
    return;
  }
  throw new InvalidUserSignatureError(
    check.reason === "malformed"
      ? "the fulfill signature is malformed"
      : `the fulfill signature recovers to ${check.signer}, not to the user ${txData.user}`,
    { transactionId: txData.transactionId },
  );
}

/** Logged here, at the one place that knows the claim is lost, at alert level for the operator. */
function senderExpired(ctx: LifecycleContext, data: FulfillSenderJobData, nowSec: number): SenderExpiredError {
  const { txData } = data;
  ctx.logger.error(
    "sending side expired before the router claimed it: the user was paid on the receiving chain and the claim is lost",
    {
      at: "submitter.fulfillSender",
      alert: true,
      transactionId: txData.transactionId,
      user: txData.user,
      expiry: txData.expiry,
      chainNowSec: nowSec,
      amount: txData.amount,
      sendingAssetId: txData.sendingAssetId,
      receiverFulfillTransactionHash: data.receiverFulfillTransactionHash,
    },
  );
  return new SenderExpiredError(`the sending side expired at ${txData.expiry} (chain time ${nowSec})`, {
    transactionId: txData.transactionId,
    expiry: txData.expiry,
  });
}

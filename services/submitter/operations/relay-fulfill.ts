import { errorClass } from "../../../shared/errors";
import { contractInterface } from "../../../shared/chain/contracts";
import { isTransactionExpired } from "../../../shared/protocol/expiry";
import { abiFulfillArgs } from "../../../shared/protocol/router-signatures";
import type { RelayFulfillJobData } from "../../../shared/queues";
import type { TxCall, TxNoop } from "../send/tx-record";
import { findPrepareReceiverInFlight } from "../../../shared/coordination/in-flight";
import { LifecycleError, ReceiverNotPreparedError } from "./errors";
import { estimateCallGas } from "./estimated-call";
import { assertUserFulfillSignature } from "./fulfill-sender";
import { noop, openPreparedSide, readSideState, revertCodeOf } from "./lifecycle";
import { relayGas, type RelayCostContext } from "./relay-cost";

/** The receiving side expired before the relay could be sent: the contract refuses the fulfill (#F:020). */
export class RelayReceiverExpiredError extends errorClass(LifecycleError, "RELAY_RECEIVER_EXPIRED", "terminal") {}

/**
 * The node's pending state shows the receiving side no longer as the job's (a fulfill or cancel waits in its
 * mempool) while the latest block still does: retried with the job's backoff; the run after it is mined is a no-op.
 */
export class RelayReceiverChangingError extends errorClass(LifecycleError, "RELAY_RECEIVER_CHANGING", "retriable") {}

/**
 * The receiving side is not on chain yet, but this router's own prepare of it can still run or has a sending or
 * confirmed transaction (a provider behind the auction's, or a prepare not mined yet): retried with the job's
 * backoff, not terminal. Once that prepare is over and the chain still shows nothing, RECEIVER_NOT_PREPARED.
 */
export class RelayReceiverPendingError extends errorClass(LifecycleError, "RELAY_RECEIVER_PENDING", "retriable") {}

/**
 * The user's receiving-side fulfill, relayed for them (docs/relaying.md), on the receiving chain:
 * 1. the user's fulfill signature must recover to `txData.user` (the same check as the sending-side claim);
 * 2. sanitation here: completed → no-op (the user or another relayer fulfilled, or it was cancelled);
 *    other variant → terminal; expired by the chain's clock → terminal; not prepared → terminal, unless our
 *    own prepare of that side is still in flight (RELAY_RECEIVER_PENDING, retried);
 * 3. `TransactionManager.fulfill({txData, relayerFee, signature, callData, 0x})` sent by the signer straight
 *    to the TransactionManager, also in router-contract mode: a relay is the user's action, not the router's,
 *    and the contract pays `relayerFee` to msg.sender. Estimated first, so a revert costs nothing;
 *    `#F:019` (completed meanwhile) is re-checked and becomes a no-op;
 * 4. the estimate priced against the user's fee (relay-cost.ts): refused for good when the fee does not pay for
 *    it (RELAY_FEE_NOT_COVERED), else the gas limit and the fee per gas are capped at what the fee pays for;
 * 5. just before it is handed to the send pipeline, the side is read again as the node's pending state shows
 *    it: a user's own fulfill (or a cancel) that landed or waits in the mempool since step 2 stops this run
 *    (RELAY_RECEIVER_CHANGING, retried), instead of a relay that reverts and that the router pays for. Retried,
 *    not a no-op: the run after that transaction is mined finds the side completed (step 2), while one that is
 *    never mined (underpriced on purpose) cannot end relaying: the job fails with nothing signed, and a later
 *    request runs it again.
 * The fulfill that lands makes the receiving chain's poller enqueue the router's sending-side claim.
 */
export async function buildRelayFulfillCall(
  ctx: RelayCostContext,
  data: RelayFulfillJobData,
): Promise<TxCall | TxNoop> {
  const { txData } = data;
  assertUserFulfillSignature(txData, data.relayerFee, data.signature);
  const opened = await openReceivingSide(ctx, data);
  if ("noop" in opened) {
    return opened.noop;
  }
  const { nowSec } = opened.state;
  if (isTransactionExpired(txData.expiry, nowSec)) {
    throw expired(data, nowSec);
  }
  const to = ctx.chain.transactionManagerAddress;
  const callData = contractInterface("TransactionManager").encodeFunctionData("fulfill", [
    abiFulfillArgs({
      txData,
      relayerFee: data.relayerFee,
      signature: data.signature,
      callData: data.callData,
      encodedMeta: "0x",
    }),
  ]);
  let estimate: bigint;
  try {
    estimate = await estimateCallGas(ctx, to, callData);
  } catch (err) {
    const code = revertCodeOf(err);
    if (code === "F:019") {
      const again = await readSideState(ctx.provider, to, txData);
      if (again.classification === "completed") {
        return noop("completed meanwhile (#F:019 at estimation)", again.blockNumber);
      }
    }
    if (code === "F:020") {
      throw expired(data, nowSec);
    }
    throw err;
  }
  const gas = await relayGas(ctx, data, estimate);
  const pending = await readSideState(ctx.provider, to, txData, "pending");
  if (pending.classification !== "prepared-matching") {
    throw new RelayReceiverChangingError(
      `the receiving side is ${pending.classification} in the node's pending state: a fulfill or cancel waits to be mined`,
      { transactionId: txData.transactionId },
    );
  }
  return {
    to,
    data: callData,
    value: "0",
    gasLimit: gas.gasLimit.toString(),
    ...(gas.maxFeePerGas === undefined ? {} : { maxFeePerGas: gas.maxFeePerGas.toString() }),
  };
}

/** openPreparedSide, except that "not prepared" while our own prepare of the side is in flight is retried. */
async function openReceivingSide(
  ctx: RelayCostContext,
  data: RelayFulfillJobData,
): Promise<Awaited<ReturnType<typeof openPreparedSide>>> {
  try {
    return await openPreparedSide(ctx, data.txData, "receiving");
  } catch (err) {
    const queue = ctx.txQueue(ctx.chainId);
    if (!(err instanceof ReceiverNotPreparedError) || !queue) {
      throw err;
    }
    const inFlight = await findPrepareReceiverInFlight({
      queue,
      redis: ctx.redis,
      prefix: ctx.config.redisPrefix,
      receivingChainId: ctx.chainId,
      transactionId: data.txData.transactionId,
      user: data.txData.user,
    });
    if (inFlight === undefined) {
      throw err;
    }
    throw new RelayReceiverPendingError(`the receiving side is not on chain yet: ${inFlight}`, {
      transactionId: data.txData.transactionId,
    });
  }
}

function expired(data: RelayFulfillJobData, nowSec: number): RelayReceiverExpiredError {
  return new RelayReceiverExpiredError(`the receiving side expired at ${data.txData.expiry} (chain time ${nowSec})`, {
    transactionId: data.txData.transactionId,
    expiry: data.txData.expiry,
  });
}

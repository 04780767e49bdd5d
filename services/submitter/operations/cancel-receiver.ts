import { isTransactionExpired } from "../../../shared/protocol/expiry";
import type { CancelReceiverJobData } from "../../../shared/queues";
import type { TxCall, TxNoop } from "../send/tx-record";
import { ReceiverDataMismatchError, ReceiverNotExpiredError, ReceiverNotPreparedError, TransferMismatchError } from "./errors";
import {
  assertOurTransfer,
  buildTransferCall,
  noop,
  readSideState,
  revertCodeOf,
  wallClockMsWhenChainPasses,
  type LifecycleContext,
} from "./lifecycle";

/**
 * Returns the router's locked liquidity after the receiving side expired unfulfilled (§3.6 receiver side),
 * on the receiving chain (the queue's chain):
 * 1. sanitation: completed (fulfilled by the user, or cancelled) → no-op; not prepared / other variant →
 *    terminal;
 * 2. only after the receiving expiry (latest block timestamp > expiry): before it the contract wants the
 *    user or the user's cancel signature (#C:022). Not yet expired is RECEIVER_NOT_EXPIRED, a "retry later"
 *    error: the job is parked in BullMQ's delayed set until the chain's clock passes the expiry, without
 *    using an attempt, so the deterministic job id waits instead of failing for good;
 * 3. cancel({txData, signature: 0x, encodedMeta: 0x}), Router.cancel in router-contract mode;
 *    `#C:019` → re-check → no-op (the user fulfilled at the last second).
 */
export async function prepareCancelReceiver(ctx: LifecycleContext, data: CancelReceiverJobData): Promise<TxCall | TxNoop> {
  const { txData } = data;
  if (txData.receivingChainId !== ctx.chainId) {
    throw new TransferMismatchError(`transfer received on chain ${txData.receivingChainId} cannot be cancelled on chain ${ctx.chainId}`, {
      transactionId: txData.transactionId,
    });
  }
  assertOurTransfer(ctx, txData);
  const state = await readSideState(ctx.provider, ctx.chain.transactionManagerAddress, txData);
  const context = { transactionId: txData.transactionId, classification: state.classification };
  if (state.classification === "completed") {
    return noop("receiving side already fulfilled or cancelled", state.blockNumber);
  }
  if (state.classification === "not-prepared") {
    throw new ReceiverNotPreparedError("the receiving side is not prepared on chain", context);
  }
  if (state.classification === "mismatch") {
    throw new ReceiverDataMismatchError("the chain stores another variant than the job's receiving data", context);
  }
  if (!isTransactionExpired(txData.expiry, state.nowSec)) {
    throw new ReceiverNotExpiredError(
      `the receiving side expires at ${txData.expiry} (chain time ${state.nowSec})`,
      wallClockMsWhenChainPasses(state.nowSec, txData.expiry),
      { ...context, expiry: txData.expiry, chainNowSec: state.nowSec },
    );
  }

  try {
    return await buildTransferCall(ctx, "cancel", { txData, signature: "0x", encodedMeta: "0x" });
  } catch (err) {
    if (revertCodeOf(err) === "C:019") {
      const again = await readSideState(ctx.provider, ctx.chain.transactionManagerAddress, txData);
      if (again.classification === "completed") {
        return noop("receiving side completed meanwhile (#C:019 at estimation)", again.blockNumber);
      }
    }
    throw err;
  }
}

import { isTransactionExpired } from "../../../shared/protocol/expiry";
import type { CancelReceiverJobData } from "../../../shared/queues";
import type { TxCall, TxNoop } from "../send/tx-record";
import { ReceiverNotExpiredError } from "./errors";
import { buildUnlessCompleted, openPreparedSide, wallClockMsWhenChainPasses, type LifecycleContext } from "./lifecycle";

/**
 * Returns the router's locked liquidity after the receiving side expired unfulfilled (docs/protocol.md#cancel-rules,
 * receiving side), on the receiving chain (the queue's chain):
 * 1. sanitation: completed (fulfilled by the user, or cancelled) → no-op; not prepared / other variant →
 *    terminal;
 * 2. only after the receiving expiry (latest block timestamp > expiry): before it the contract wants the
 *    user or the user's cancel signature (#C:022). Not yet expired is RECEIVER_NOT_EXPIRED, a "retry later"
 *    error: the job is parked in BullMQ's delayed set until the chain's clock passes the expiry, without
 *    using an attempt, so the deterministic job id waits instead of failing for good;
 * 3. cancel({txData, signature: 0x, encodedMeta: 0x}), Router.cancel in router-contract mode;
 *    `#C:019` → re-check → no-op (the user fulfilled at the last second).
 */
export async function buildCancelReceiverCall(
  ctx: LifecycleContext,
  data: CancelReceiverJobData,
): Promise<TxCall | TxNoop> {
  const { txData } = data;
  const opened = await openPreparedSide(ctx, txData, "receiving");
  if ("noop" in opened) {
    return opened.noop;
  }
  const { nowSec } = opened.state;
  if (!isTransactionExpired(txData.expiry, nowSec)) {
    throw new ReceiverNotExpiredError(
      `the receiving side expires at ${txData.expiry} (chain time ${nowSec})`,
      wallClockMsWhenChainPasses(nowSec, txData.expiry),
      { transactionId: txData.transactionId, expiry: txData.expiry, chainNowSec: nowSec },
    );
  }
  return buildUnlessCompleted(ctx, "cancel", { txData, signature: "0x", encodedMeta: "0x" });
}

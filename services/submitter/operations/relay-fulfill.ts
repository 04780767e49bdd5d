import { contractInterface } from "../../../shared/chain/contracts";
import { isTransactionExpired } from "../../../shared/protocol/expiry";
import { abiFulfillArgs } from "../../../shared/protocol/router-signatures";
import type { RelayFulfillJobData } from "../../../shared/queues";
import type { TxCall, TxNoop } from "../send/tx-record";
import { LifecycleError } from "./errors";
import { assertUserFulfillSignature } from "./fulfill-sender";
import { noop, openPreparedSide, readSideState, revertCodeOf, type LifecycleContext } from "./lifecycle";
import { GAS_LIMIT_HEADROOM_PERCENT } from "./remove-liquidity";

/** The receiving side expired before the relay could be sent: the contract refuses the fulfill (#F:020). */
export class RelayReceiverExpiredError extends LifecycleError {
  readonly code = "RELAY_RECEIVER_EXPIRED";
  readonly retriable = false;
}

/**
 * The user's receiving-side fulfill, relayed for them (docs/relaying.md), on the receiving chain:
 * 1. the user's fulfill signature must recover to `txData.user` (the same check as the sending-side claim);
 * 2. sanitation here: completed → no-op (the user or another relayer fulfilled, or it was cancelled);
 *    not prepared / other variant → terminal; expired by the chain's clock → terminal;
 * 3. `TransactionManager.fulfill({txData, relayerFee, signature, callData, 0x})` sent by the signer straight
 *    to the TransactionManager, also in router-contract mode: a relay is the user's action, not the router's,
 *    and the contract pays `relayerFee` to msg.sender. Estimated first, so a revert costs nothing;
 *    `#F:019` (completed meanwhile) is re-checked and becomes a no-op.
 * The fulfill that lands makes the receiving chain's poller enqueue the router's sending-side claim.
 */
export async function prepareRelayFulfill(ctx: LifecycleContext, data: RelayFulfillJobData): Promise<TxCall | TxNoop> {
  const { txData } = data;
  assertUserFulfillSignature(txData, data.relayerFee, data.signature);
  const opened = await openPreparedSide(ctx, txData, "receiving");
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
  try {
    const estimate = await ctx.provider.estimateGas({ from: ctx.from, to, data: callData, value: 0n });
    return {
      to,
      data: callData,
      value: "0",
      gasLimit: ((estimate * (100n + GAS_LIMIT_HEADROOM_PERCENT)) / 100n).toString(),
    };
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
}

function expired(data: RelayFulfillJobData, nowSec: number): RelayReceiverExpiredError {
  return new RelayReceiverExpiredError(`the receiving side expired at ${data.txData.expiry} (chain time ${nowSec})`, {
    transactionId: data.txData.transactionId,
    expiry: data.txData.expiry,
  });
}

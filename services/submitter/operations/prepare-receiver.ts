import { readVariantTransactionData } from "../../../shared/chain/router-balances";
import { blockTimestamp } from "../../../shared/chain/transfer-events";
import { readAhead } from "../../../shared/timing";
import { SenderNotPreparedError } from "../../../shared/chain/sender-cancel-errors";
import { TransferMismatchError } from "../../../shared/protocol/errors";
import { DEFAULT_TOLERANCE_PERCENT } from "../../../shared/protocol/amounts";
import {
  classifyVariant,
  invariantDigest,
  invariantOf,
  type VariantClassification,
} from "../../../shared/protocol/digests";
import { verifySenderPrepare, type VerifySenderPrepareOk } from "../../../shared/protocol/verify-sender";
import type { PrepareReceiverJobData } from "../../../shared/queues";
import { claimTransferDecision, findSenderCancelIntent } from "../../../shared/coordination/transfer-decision";
import { unnamedNoncesOn, type TxCall, type TxNoop } from "../send/tx-record";
import {
  ChainNotConfiguredError,
  LiquidityInFlightError,
  LIQUIDITY_IN_FLIGHT_RETRY_MS,
  NotEnoughLiquidityError,
  SenderCancelDecidedError,
  SenderCompletedError,
  SenderDataMismatchError,
  SenderNotConfirmedError,
  SenderRefundUnsettledError,
  SenderVerificationError,
  SENDER_REFUND_UNSETTLED_RETRY_MS,
} from "./errors";
import { holdLiquidity } from "./hold-liquidity";
import { unnamedInFlight } from "./unnamed-in-flight";
import {
  buildTransferCall,
  chainConfigOf,
  noop,
  readProviderOf,
  readSideState,
  revertCodeOf,
  routerAddressOf,
  type LifecycleContext,
} from "./lifecycle";

/**
 * The receiving-side prepare (docs/protocol.md#receiving-prepare), on the receiving chain (the queue's chain). Locks
 * the router's liquidity for the user, so every input is proven before anything is sent:
 * 1. sanitation: already prepared here (any non-zero variant) → no-op;
 * 2. no sender cancel for the transfer: none decided, no cancel-sender job in any state, no cancel-sender
 *    transaction record (SENDER_CANCEL_DECIDED, terminal: the refund is under way; see step 8);
 * 3. the sending side on the SENDING chain: its stored variant must be exactly the job's
 *    (amount, expiry, preparedBlockNumber). That proves the job's TransactionData is real and still
 *    prepared; the prepare must have the sending chain's confirmations (SENDER_NOT_CONFIRMED, retried);
 *    the prepare block's timestamp is then read from the chain, never taken from the job;
 * 4. no refund of the sending side under way, proven on the sending chain (step 2 reads Redis, and a Redis
 *    failover can lose a cancel-sender decision, job and record after the refund was broadcast): the sending side
 *    read at the `pending` tag is still the job's variant (a refund in the node's mempool shows it cancelled:
 *    SENDER_COMPLETED, terminal), and every transaction of the router's signer in flight on the sending chain is
 *    named by a send record (else SENDER_REFUND_UNSETTLED, parked 5 s without spending an attempt: an unnamed one
 *    may be that refund);
 * 5. `verifySenderPrepare` (bid signature, every bid field against the invariant, pools, bid expiry,
 *    expiry window, amount): a refusal is terminal, its code the reason, cancellable as verify says;
 * 6. our unlocked liquidity, read at a fixed block net of the chain's liquidity holds (prepares and withdrawals
 *    sent but not mined), covers the receiving amount, and the amount is held (atomic, liquidity-in-flight.ts):
 *    cancellable NOT_ENOUGH_LIQUIDITY when the balance itself is short, LIQUIDITY_IN_FLIGHT (parked 2 s) when
 *    only the holds make it short. This is the liquidity decision: eth_estimateGas may run against `latest`;
 * 7. prepare({invariantData, amount, expiry, encryptedCallData, encodedBid, bidSignature, 0x}), estimated:
 *    `#P:015` → no-op (prepared meanwhile), `#P:018` → NOT_ENOUGH_LIQUIDITY, other reverts terminal;
 * 8. the transfer's decision is claimed as "prepare" (atomic; refused if a sender cancel claimed it first).
 *    Claimed after the estimate, so a refusal up to here leaves no claim behind and its refund can go ahead;
 *    nothing is signed or sent before the claim.
 */
export async function buildPrepareReceiverCall(
  ctx: LifecycleContext,
  data: PrepareReceiverJobData,
): Promise<TxCall | TxNoop> {
  const { txData } = data.sender;
  if (txData.receivingChainId !== ctx.chainId || data.sender.chainId !== txData.sendingChainId) {
    throw new TransferMismatchError(
      `transfer ${txData.sendingChainId} → ${txData.receivingChainId} (record on ${data.sender.chainId}) is not received on chain ${ctx.chainId}`,
      { transactionId: txData.transactionId },
    );
  }
  // Steps 1–4 only read, each on another chain or Redis: they run at once and are judged in their order (between
  // hosts each read is a round trip, and a round trip can be 400 ms).
  const noSenderCancel = readAhead(assertNoSenderCancel(ctx, data));
  const senderPrepared = readAhead(assertSenderPrepared(ctx, data));
  const noRefundUnderway = readAhead(assertNoRefundUnderway(ctx, data));
  const here = await readSideState(ctx.provider, ctx.chain.transactionManagerAddress, txData);
  if (here.classification !== "not-prepared") {
    return noop(
      `receiving side already ${here.classification === "completed" ? "prepared and completed" : "prepared"}`,
      here.blockNumber,
    );
  }
  await noSenderCancel;
  const senderPreparedAtSec = await senderPrepared;
  await noRefundUnderway;
  const verified = verify(ctx, data, senderPreparedAtSec, here.nowSec);
  await assertLiquidity(ctx, verified);

  let call: TxCall;
  try {
    call = await buildTransferCall(ctx, "prepare", {
      invariantData: verified.invariant,
      amount: verified.receiverAmount,
      expiry: verified.receiverExpiry,
      encryptedCallData: data.sender.encryptedCallData,
      encodedBid: data.sender.encodedBid,
      bidSignature: data.sender.bidSignature,
      encodedMeta: "0x",
    });
  } catch (err) {
    const code = revertCodeOf(err);
    if (code === "P:015") {
      return noop("receiving side prepared meanwhile (#P:015 at estimation)", here.blockNumber);
    }
    if (code === "P:018") {
      throw new NotEnoughLiquidityError(
        "router balance too low at estimation (#P:018)",
        { transactionId: txData.transactionId },
        { cause: err },
      );
    }
    throw err;
  }
  await claimPrepare(ctx, data);
  return call;
}

/** Step 2: a sender cancel that exists in any form wins; the receiving side is then never prepared. */
async function assertNoSenderCancel(ctx: LifecycleContext, data: PrepareReceiverJobData): Promise<void> {
  const { txData } = data.sender;
  const queue = ctx.txQueue(txData.sendingChainId);
  if (!queue) {
    throw new ChainNotConfiguredError(`chain ${txData.sendingChainId} has no transaction queue in this config`, {
      chainId: txData.sendingChainId,
    });
  }
  const why = await findSenderCancelIntent({
    queue,
    redis: ctx.redis,
    prefix: ctx.config.redisPrefix,
    sendingChainId: txData.sendingChainId,
    transactionId: txData.transactionId,
    user: txData.user,
  });
  if (why !== undefined) {
    throw new SenderCancelDecidedError(`receiving prepare refused: ${why}`, { transactionId: txData.transactionId });
  }
}

/** Step 8: the atomic half of step 2; a sender cancel that got in between the two is caught here. */
async function claimPrepare(ctx: LifecycleContext, data: PrepareReceiverJobData): Promise<void> {
  const { txData } = data.sender;
  const claim = await claimTransferDecision({
    redis: ctx.redis,
    prefix: ctx.config.redisPrefix,
    transactionId: txData.transactionId,
    user: txData.user,
    decision: "prepare",
    expirySec: txData.expiry,
  });
  if (!claim.ok) {
    throw new SenderCancelDecidedError(
      `receiving prepare refused: the transfer's recorded decision is ${claim.recorded}`,
      {
        transactionId: txData.transactionId,
      },
    );
  }
}

/**
 * Step 3; returns the sending prepare's block timestamp (authentic: the variant commits to its block number).
 * Also demands the sending chain's confirmations on the prepare (the poller waits for them before it
 * enqueues; this does not rely on it): a re-orged sending side with a live receiving side is a loss.
 */
async function assertSenderPrepared(ctx: LifecycleContext, data: PrepareReceiverJobData): Promise<number> {
  const { txData } = data.sender;
  const sendingChain = chainConfigOf(ctx, txData.sendingChainId);
  const sending = readProviderOf(ctx, txData.sendingChainId);
  // The prepare block's timestamp is read at once too; it counts only for a matching prepare.
  const preparedAtSec = readAhead(blockTimestamp(sending, txData.preparedBlockNumber));
  const state = await readSideState(sending, sendingChain.transactionManagerAddress, txData);
  const context = {
    transactionId: txData.transactionId,
    sendingChainId: txData.sendingChainId,
    classification: state.classification,
  };
  switch (state.classification) {
    case "prepared-matching": {
      const confirmations = state.blockNumber - txData.preparedBlockNumber + 1;
      if (confirmations < sendingChain.confirmations) {
        throw new SenderNotConfirmedError(
          `the sending prepare has ${confirmations} of ${sendingChain.confirmations} confirmations`,
          { ...context, confirmations, required: sendingChain.confirmations },
        );
      }
      return preparedAtSec;
    }
    default:
      return refuseSendingSide(state.classification, "", context);
  }
}

/**
 * Step 4. The two reads run at once: the sending side at `pending`, and the signer's transactions in flight on the
 * sending chain (two transaction counts, then one HMGET of the sending chain's nonce-jobs index when any is in
 * flight). A refund whose decision, job and record a Redis failover lost is in the mempool (the first read sees it)
 * or, behind a provider whose mempool lags, still a nonce in flight that no record names (the second).
 */
async function assertNoRefundUnderway(ctx: LifecycleContext, data: PrepareReceiverJobData): Promise<void> {
  const { txData } = data.sender;
  const sendingChain = chainConfigOf(ctx, txData.sendingChainId);
  const sending = readProviderOf(ctx, txData.sendingChainId);
  const records = {
    unnamedNonces: (from: string, nonces: readonly number[]) =>
      unnamedNoncesOn(
        { redis: ctx.redis, prefix: ctx.config.redisPrefix, chainId: txData.sendingChainId },
        from,
        nonces,
      ),
  };
  const inFlight = readAhead(unnamedInFlight(sending, records, ctx.from));
  const pendingVariant = await readVariantTransactionData(
    sending,
    sendingChain.transactionManagerAddress,
    invariantDigest(invariantOf(txData)),
    "pending",
  );
  const classification = classifyVariant(pendingVariant, txData);
  if (classification !== "prepared-matching") {
    refuseSendingSide(classification, " at the pending tag (a transaction in the mempool changes it)", {
      transactionId: txData.transactionId,
      sendingChainId: txData.sendingChainId,
      classification,
      blockTag: "pending",
    });
  }
  const { latest, pending, unnamed } = await inFlight;
  if (unnamed.length > 0) {
    throw new SenderRefundUnsettledError(
      `${unnamed.length} transaction(s) of the signer in flight on the sending chain have no send record; one may be a refund of this transfer`,
      Date.now() + SENDER_REFUND_UNSETTLED_RETRY_MS,
      {
        transactionId: txData.transactionId,
        sendingChainId: txData.sendingChainId,
        latest,
        pending,
        unknownNonces: unnamed.slice(0, 10),
      },
    );
  }
}

/** Steps 3 and 4: the refusal for a sending side that is not the job's prepared variant (`where` read). */
function refuseSendingSide(
  classification: Exclude<VariantClassification, "prepared-matching">,
  where: string,
  context: Record<string, unknown>,
): never {
  switch (classification) {
    case "completed":
      throw new SenderCompletedError(`the sending side is already fulfilled or cancelled${where}`, context);
    case "not-prepared":
      throw new SenderNotPreparedError(`the sending side is not prepared on the sending chain${where}`, context);
    default:
      throw new SenderDataMismatchError(
        `the sending chain stores another variant than the job's sending data${where}`,
        context,
      );
  }
}

/** Step 5: defence in depth, whoever built the job; `nowSec` is this (receiving) chain's time. */
function verify(
  ctx: LifecycleContext,
  data: PrepareReceiverJobData,
  senderPreparedAtSec: number,
  nowSec: number,
): VerifySenderPrepareOk {
  const sender = data.sender;
  const result = verifySenderPrepare({
    // The job's sending side as a prepared record, with the timestamp this run read from the sending chain.
    sender: { ...sender, status: "Prepared", preparedTimestamp: senderPreparedAtSec },
    routerSignerAddress: ctx.from,
    routerAddress: routerAddressOf(ctx),
    receivingTxManagerAddress: ctx.chain.transactionManagerAddress,
    sendingTxManagerAddress: chainConfigOf(ctx, sender.txData.sendingChainId).transactionManagerAddress,
    swapPools: ctx.config.swapPools,
    nowSec,
    tolerancePercent: DEFAULT_TOLERANCE_PERCENT,
  });
  if (!result.ok) {
    throw new SenderVerificationError({
      reason: result.reason,
      cancellable: result.cancellable,
      detail: result.detail,
      context: { transactionId: sender.txData.transactionId },
    });
  }
  return result;
}

/**
 * Step 6: on chain, net of the chain's holds (our prepares and withdrawals sent but not mined, across takeovers),
 * and the amount is held from here until the transaction is mined (or the run ends without one). A refusal
 * here comes before the decision is claimed, so the sender cancel stays possible.
 */
async function assertLiquidity(ctx: LifecycleContext, verified: VerifySenderPrepareOk): Promise<void> {
  const assetId = verified.invariant.receivingAssetId;
  const check = await holdLiquidity(ctx, assetId, verified.receiverAmount);
  if (check.ok) {
    return;
  }
  const context = {
    transactionId: verified.invariant.transactionId,
    assetId,
    balance: check.balance.toString(),
    balanceBlock: check.balanceBlock,
    receiverAmount: verified.receiverAmount.toString(),
  };
  if (check.balance < verified.receiverAmount) {
    throw new NotEnoughLiquidityError(
      `unlocked liquidity ${check.balance.toString()} is below the receiving amount ${verified.receiverAmount.toString()}`,
      context,
    );
  }
  throw new LiquidityInFlightError(
    `unlocked liquidity ${check.balance.toString()} covers the receiving amount only without ${check.heldByOthers.toString()} held by transactions in flight`,
    Date.now() + LIQUIDITY_IN_FLIGHT_RETRY_MS,
    { ...context, heldByOthers: check.heldByOthers.toString() },
  );
}

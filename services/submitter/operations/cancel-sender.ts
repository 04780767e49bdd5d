import { checkSenderCancelOnChain, type SenderCancelVerdict } from "../../../shared/chain/sender-cancel-check";
import type { TransactionData } from "../../../shared/protocol/types";
import type { CancelSenderJobData } from "../../../shared/queues";
import { findPrepareReceiverInFlight } from "../../../shared/coordination/in-flight";
import { claimTransferDecision, readTransferDecision } from "../../../shared/coordination/transfer-decision";
import type { TxCall, TxNoop } from "../send/tx-record";
import {
  ReceiverPrepareDecidedError,
  ReceiverPrepareRevertNotFinalError,
  senderCancelRefusalError,
} from "../../../shared/chain/sender-cancel-errors";
import { proveReceivingPrepareReverted } from "../../../shared/chain/reverted-prepare";
import type { RouterError } from "../../../shared/errors";
import { REVERT_FINALITY_RETRY_MS } from "./errors";
import {
  buildUnlessCompleted,
  chainConfigOf,
  openPreparedSide,
  readProviderOf,
  wallClockMsWhenChainPasses,
  type LifecycleContext,
} from "./lifecycle";

/**
 * Refund of the sending side to `sendingChainFallback` (docs/protocol.md#cancel-rules), on the sending chain (the
 * queue's chain). Cancelling the sender while the receiving side can still pay the user loses the router's funds, so:
 * 1. sanitation here: completed → no-op; not prepared / other variant → terminal;
 * 2. unless `force` (admin only) with no receiving prepare recorded: the on-chain sender-cancel check
 *    (shared/chain/sender-cancel-check.ts): receiving side never prepared (and no prepare-receiver in flight) or cancelled, never fulfilled
 *    (RECEIVER_FULFILLED), never live (RECEIVER_LIVE); the 780 s rule before the sender's expiry, waived for the
 *    refund of a receiving prepare this router refused (`afterOwnRefusal`: no prepare of ours can follow). Time
 *    rules park the job until they pass (SENDER_TOO_NEW, RECEIVER_UNVERIFIABLE);
 * 3. the transfer's decision is claimed as "cancel-sender" (shared/coordination/transfer-decision.ts). A recorded
 *    "prepare" is only replaced when the check proved the receiving side cancelled on chain, or when the receiving
 *    side is not prepared and the prepare's own transaction was mined reverted at least `confirmations` deep
 *    (shared/chain/reverted-prepare.ts; parked until then: RECEIVER_PREPARE_REVERT_NOT_FINAL). Otherwise the
 *    receiving prepare may be in a mempool or in blocks a lagging provider misses: RECEIVER_PREPARE_DECIDED
 *    (retried). `force` never overrides a recorded prepare;
 * 4. cancel({txData, signature: 0x, encodedMeta: 0x}) from the router: before expiry only the router may
 *    cancel (#C:025), so router-contract mode goes through Router.cancel; `#C:019` → re-check → no-op.
 */
export async function buildCancelSenderCall(
  ctx: LifecycleContext,
  data: CancelSenderJobData,
): Promise<TxCall | TxNoop> {
  const { txData } = data;
  const opened = await openPreparedSide(ctx, txData, "sending");
  if ("noop" in opened) {
    return opened.noop;
  }
  const { state } = opened;
  const decisionParams = {
    redis: ctx.redis,
    prefix: ctx.config.redisPrefix,
    transactionId: txData.transactionId,
    user: txData.user,
  };
  const prepareRecorded = (await readTransferDecision(decisionParams)) === "prepare";

  let prepareOver: PrepareOver = { over: false, detail: "no receiving prepare is recorded" };
  if (data.force && !prepareRecorded) {
    ctx.logger.warn(
      "FORCED sender cancel: the receiving side is not checked; if it is live the router loses the amount",
      {
        at: "submitter.cancelSender",
        transactionId: txData.transactionId,
        requestId: data.requestId,
        reason: data.reason,
      },
    );
  } else {
    if (data.force) {
      ctx.logger.warn(
        "FORCED sender cancel not forced: a receiving prepare is recorded, so the receiving side is checked",
        {
          at: "submitter.cancelSender",
          transactionId: txData.transactionId,
          requestId: data.requestId,
          reason: data.reason,
        },
      );
    }
    const verdict = await checkSenderCancelOnChain({
      txData,
      sendingProvider: ctx.provider,
      sendingNowSec: state.nowSec,
      receiving: receivingOf(ctx, txData),
      receiverPrepareInFlight: () => prepareReceiverInFlight(ctx, txData),
      // Our own refusal's refund: nothing of ours can prepare the receiving side any more, so no 780 s wait.
      waivePrepareBuffer: data.afterOwnRefusal === true,
    });
    if (!verdict.ok) {
      throw refusalError(ctx, txData, verdict, state.nowSec);
    }
    if (prepareRecorded) {
      prepareOver = await recordedPrepareOver(ctx, txData, verdict.receiverState);
    }
  }

  const claim = await claimTransferDecision({
    ...decisionParams,
    decision: "cancel-sender",
    replacing: prepareOver.over ? "prepare" : undefined,
    expirySec: txData.expiry,
  });
  if (!claim.ok) {
    const why = prepareOver.over ? "" : `: ${prepareOver.detail}`;
    throw new ReceiverPrepareDecidedError(
      `a receiving prepare is the transfer's recorded decision, and neither cancelled nor reverted for good${why}`,
      { transactionId: txData.transactionId, receivingChainId: txData.receivingChainId, force: data.force },
    );
  }
  return buildUnlessCompleted(ctx, "cancel", { txData, signature: "0x", encodedMeta: "0x" });
}

type PrepareOver = { readonly over: true } | { readonly over: false; readonly detail: string };

/**
 * Step 3: whether a recorded receiving prepare can no longer take effect: the receiving side cancelled on chain, or
 * not prepared with the prepare's transaction reverted for good. A revert not yet final parks the job.
 */
async function recordedPrepareOver(
  ctx: LifecycleContext,
  txData: TransactionData,
  receiverState: string,
): Promise<PrepareOver> {
  if (receiverState === "cancelled") {
    return { over: true };
  }
  if (receiverState !== "not-prepared") {
    return { over: false, detail: `the receiving side is ${receiverState}` };
  }
  const receiving = chainConfigOf(ctx, txData.receivingChainId);
  const proof = await proveReceivingPrepareReverted({
    redis: ctx.redis,
    prefix: ctx.config.redisPrefix,
    receiving: {
      transactionManager: receiving.transactionManagerAddress,
      confirmations: receiving.confirmations,
      provider: readProviderOf(ctx, txData.receivingChainId),
    },
    txData,
  });
  const context = { transactionId: txData.transactionId, receivingChainId: txData.receivingChainId };
  if (proof.kind === "not-final") {
    throw new ReceiverPrepareRevertNotFinalError(
      `the receiving prepare ${proof.transactionHash} reverted ${proof.depth} of ${proof.required} blocks deep`,
      {
        ...context,
        transactionHash: proof.transactionHash,
        depth: proof.depth,
        required: proof.required,
        retryAtMs: Date.now() + REVERT_FINALITY_RETRY_MS,
      },
    );
  }
  if (proof.kind === "none") {
    return { over: false, detail: proof.detail };
  }
  ctx.logger.warn("the recorded receiving prepare reverted for good: the sender cancel replaces it", {
    at: "submitter.cancelSender",
    ...context,
    revertedHash: proof.transactionHash,
    revertedBlock: proof.blockNumber,
  });
  return { over: true };
}

function receivingOf(
  ctx: LifecycleContext,
  txData: TransactionData,
): { provider: NonNullable<ReturnType<LifecycleContext["readProvider"]>>; transactionManager: string } | undefined {
  const chain = ctx.config.chainConfig[String(txData.receivingChainId)];
  const provider = ctx.readProvider(txData.receivingChainId);
  return chain && provider ? { provider, transactionManager: chain.transactionManagerAddress } : undefined;
}

async function prepareReceiverInFlight(ctx: LifecycleContext, txData: TransactionData): Promise<string | undefined> {
  const queue = ctx.txQueue(txData.receivingChainId);
  if (!queue) {
    return undefined;
  }
  return findPrepareReceiverInFlight({
    queue,
    redis: ctx.redis,
    prefix: ctx.config.redisPrefix,
    receivingChainId: txData.receivingChainId,
    transactionId: txData.transactionId,
    user: txData.user,
  });
}

/** The longest a refused sender cancel waits before the rules are checked again. */
const MAX_PARK_MS = 5 * 60_000;

function refusalError(
  ctx: LifecycleContext,
  txData: TransactionData,
  verdict: Extract<SenderCancelVerdict, { ok: false }>,
  nowSec: number,
): RouterError {
  const context = { transactionId: txData.transactionId, receivingChainId: txData.receivingChainId };
  if (verdict.refusal === "receiver-fulfilled") {
    ctx.logger.error(
      "sender cancel requested after the receiving side was fulfilled: refused, the sender must be fulfilled instead",
      { at: "submitter.cancelSender", alert: true, ...context, user: txData.user },
    );
  }
  // Park until the clock the check judged by passes the rule, not the sending chain's clock alone: a receiving
  // chain whose clock lags would otherwise bring the job back every few seconds. Bounded, since a quiet chain's
  // latest block may be old and its clock advance in jumps.
  const judgedAtSec = verdict.judgedAtSec ?? nowSec;
  const retryAtMs = Math.min(
    wallClockMsWhenChainPasses(judgedAtSec, verdict.retryAtSec ?? judgedAtSec),
    Date.now() + MAX_PARK_MS,
  );
  return senderCancelRefusalError(verdict, { retryAtMs, context });
}

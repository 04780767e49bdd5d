import { withTimeout } from "../../../shared/timing";
import { waitForBroadcast, type BroadcastOutcome } from "../../../shared/queues/wait-for-broadcast";
import type { Redis } from "ioredis";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { readVariantTransactionData } from "../../../shared/chain/router-balances";
import { checkSenderCancelOnChain, type SenderCancelVerdict } from "../../../shared/chain/sender-cancel-check";
import {
  ReceiverBeingPreparedError,
  ReceiverFulfilledError,
  ReceiverLiveError,
  ReceiverNotCancelledError,
  ReceiverPrepareDecidedError,
  ReceiverPrepareRevertNotFinalError,
  ReceiverStateUnknownError,
  ReceiverUnverifiableError,
  SenderNotPreparedError,
  SenderTooNewError,
  senderCancelRefusalError,
} from "../../../shared/chain/sender-cancel-errors";
import { undecodableLogFields } from "../../../shared/chain/tm-log-decoder";
import { blockTimestamp, findTransferEvents } from "../../../shared/chain/transfer-events";
import type { RouterConfig } from "../../../shared/config/types";
import { RouterError, errorCode } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import { classifyVariant, invariantDigest, invariantOf } from "../../../shared/protocol/digests";
import type { TransactionData, TransferRecord } from "../../../shared/protocol/types";
import type { TransferLookup } from "../../../shared/transfers/transfer-store";
import { sameHex } from "../../../shared/protocol/values";
import { TX_JOB, txJobOptions, transferKey, txJobId, type CancelSenderJobData } from "../../../shared/queues";
import { findPrepareReceiverInFlight } from "../../../shared/coordination/in-flight";
import { readTransferDecision } from "../../../shared/coordination/transfer-decision";
import { proveReceivingPrepareReverted } from "../../../shared/chain/reverted-prepare";
import type { CancelSenderRequest, OperationContext, TransactionResponse } from "../types";
import { DEFAULT_BROADCAST_TIMEOUT_MS, QUEUE_CALL_TIMEOUT_MS, queueCall, type TxRequestDeps } from "./enqueue-and-wait";
import { ChainUnavailableError, QueueUnavailableError, TransactionNotFoundError } from "./errors";

/**
 * How far back the sending chain's TransactionPrepared logs are searched when the transfer store has no
 * record: 20 requests of 5 000 blocks at most (about 14 days on Ethereum, 2.3 on Polygon). Older transfers
 * are found through the store, which the pollers fill.
 */
export const DEFAULT_SENDER_LOOKBACK_BLOCKS = 100_000;

export interface CancelSenderDeps extends TxRequestDeps {
  readonly config: RouterConfig;
  /** `invariant.router` of our transfers: the Router contract in router-contract mode, else the signer. */
  readonly routerAddress: string;
  /** For the receiving chain's prepare-receiver transaction record and the transfer's decision. */
  readonly redis: Pick<Redis, "hget" | "get">;
  /** Read provider of a configured chain. */
  readProvider(chainId: number): ChainProvider;
  readonly findTransfer?: TransferLookup;
  readonly senderLookbackBlocks?: number;
}

export type CancelSenderOperation = (
  params: CancelSenderRequest,
  ctx: OperationContext,
) => Promise<TransactionResponse>;

interface PreparedSender {
  readonly txData: TransactionData;
  readonly provider: ChainProvider;
  /** Latest block timestamp of the sending chain. */
  readonly nowSec: number;
}

/**
 * POST /cancel-sender: refund a sending-side transaction to its fallback address, through the sending
 * chain's submitter (job `cancel-sender-<transferKey>`, the same id the lifecycle uses, so one transfer
 * is never cancelled by two jobs):
 * 1. a cancel-sender job for the transfer that has not failed is reused: its hash is the answer;
 * 2. the sending side: the transfer store's record, else the chain's TransactionPrepared logs (bounded
 *    lookback), each proven on chain by its variant: none → 404; only completed ones → 409;
 * 3. unless `force`, the on-chain sender-cancel check: 409 receiver_live (prepared and live, expired but
 *    not cancelled, or being prepared), receiver_fulfilled, receiver_unverifiable, sender_too_new. When a
 *    receiving prepare is the transfer's recorded decision the check runs even with `force`, and only the proof
 *    the submitter's refund itself demands lets it through: the receiving side cancelled on chain, or not
 *    prepared with the prepare's own transaction reverted for good (shared/chain/reverted-prepare.ts;
 *    409 receiver_prepare_revert_not_final while the revert is not yet `confirmations` deep,
 *    409 receiver_prepare_decided otherwise);
 * 4. enqueue (a failed job under the id is replaced) and answer once broadcast. The submitter re-checks.
 */
export function createCancelSenderOperation(deps: CancelSenderDeps): CancelSenderOperation {
  const timeoutMs = deps.broadcastTimeoutMs ?? DEFAULT_BROADCAST_TIMEOUT_MS;
  return async (params, ctx) => {
    const jobId = txJobId(TX_JOB.cancelSender, transferKey(params.transactionId, params.user));
    const queue = deps.queueFor(params.senderChainId);
    const events = deps.queueEventsFor(params.senderChainId);
    const logger = deps.logger.child({ requestId: ctx.requestId, jobId, chainId: params.senderChainId });

    const existing = await queueCall(() => queue.getJob(jobId));
    if (existing && !(await queueCall(() => existing.isFailed()))) {
      logger.info("a cancel-sender job exists for this transfer: answering with its transaction", {
        at: "admin.cancelSender",
      });
      return answer(await waitForBroadcast({ queue, events, jobId, timeoutMs }), logger);
    }
    const sender = await decisionRead(() => findPreparedSender(deps, params));
    const prepareRecorded =
      (await decisionRead(() =>
        queueCall(() =>
          readTransferDecision({
            redis: deps.redis,
            prefix: deps.config.redisPrefix,
            transactionId: sender.txData.transactionId,
            user: sender.txData.user,
          }),
        ),
      )) === "prepare";
    if (prepareRecorded) {
      await assertRecordedPrepareOver(deps, sender, params.force, logger);
    } else if (params.force) {
      logger.warn(
        "FORCED cancel-sender: receiving-side checks skipped; a live or fulfilled receiving side loses the router's funds",
        {
          at: "admin.cancelSender",
          transactionId: params.transactionId,
          user: params.user,
          receivingChainId: sender.txData.receivingChainId,
        },
      );
    } else {
      await decisionRead(() => assertCancelSafe(deps, sender));
    }
    const data: CancelSenderJobData = {
      chainId: params.senderChainId,
      txData: sender.txData,
      reason: "admin",
      force: params.force,
      requestId: ctx.requestId,
    };
    const outcome = await waitForBroadcast({
      queue,
      events,
      jobId,
      timeoutMs,
      enqueue: async () => {
        if (existing) {
          // A failed job would swallow the add (same id); the checks above are the fresh decision.
          await queueCall(() => existing.remove());
        }
        await queueCall(() => queue.add(TX_JOB.cancelSender, data, txJobOptions(TX_JOB.cancelSender, jobId)));
      },
    });
    return answer(outcome, logger);
  };
}

function answer(outcome: BroadcastOutcome, logger: Logger): TransactionResponse {
  if (outcome.noop) {
    throw new SenderNotPreparedError("the sending side was already fulfilled or cancelled; nothing was sent");
  }
  logger.info("cancel-sender broadcast", { at: "admin.cancelSender", transactionHash: outcome.transactionHash });
  return { transactionHash: outcome.transactionHash };
}

/** The newest candidate that the sending chain proves prepared; 404 when none exists, 409 when all are done. */
async function findPreparedSender(deps: CancelSenderDeps, params: CancelSenderRequest): Promise<PreparedSender> {
  const provider = deps.readProvider(params.senderChainId);
  const tm = deps.config.chainConfig[String(params.senderChainId)].transactionManagerAddress;
  let sawCompleted = false;
  const firstPrepared = async (candidates: readonly TransactionData[]): Promise<TransactionData | undefined> => {
    for (const txData of candidates) {
      const actual = await readVariantTransactionData(provider, tm, invariantDigest(invariantOf(txData)));
      const classification = classifyVariant(actual, txData);
      if (classification === "prepared-matching") {
        return txData;
      }
      sawCompleted ||= classification === "completed";
    }
    return undefined;
  };
  const stored = await fromStore(deps, params);
  const found =
    (await firstPrepared(stored ? [stored] : [])) ?? (await firstPrepared(await fromLogs(deps, params, provider, tm)));
  if (!found) {
    throw sawCompleted
      ? new SenderNotPreparedError(`sending side of ${params.transactionId} is already fulfilled or cancelled`)
      : new TransactionNotFoundError(
          `no sending-side transaction ${params.transactionId} of ${params.user} on chain ${params.senderChainId}`,
        );
  }
  return { txData: found, provider, nowSec: await blockTimestamp(provider, "latest") };
}

/** The store's record, if it is this router's sending side of exactly this transfer. A store failure is not fatal. */
async function fromStore(deps: CancelSenderDeps, params: CancelSenderRequest): Promise<TransactionData | undefined> {
  if (!deps.findTransfer) {
    return undefined;
  }
  let record: TransferRecord | undefined;
  try {
    record = await withTimeout(
      deps.findTransfer(params.senderChainId, params.transactionId, params.user),
      QUEUE_CALL_TIMEOUT_MS,
    );
  } catch (err) {
    deps.logger.warn("transfer store unavailable: searching the chain's logs", {
      at: "admin.cancelSender",
      code: errorCode(err),
    });
    return undefined;
  }
  const txData = record?.txData;
  const mine =
    txData !== undefined &&
    txData.sendingChainId === params.senderChainId &&
    sameHex(txData.transactionId, params.transactionId) &&
    sameHex(txData.user, params.user) &&
    sameHex(txData.router, deps.routerAddress);
  return mine ? txData : undefined;
}

/** Sending-side TransactionPrepared events of the transfer in the lookback window, newest first. */
async function fromLogs(
  deps: CancelSenderDeps,
  params: CancelSenderRequest,
  provider: ChainProvider,
  tm: string,
): Promise<TransactionData[]> {
  const head = await provider.getBlockNumber();
  const lookback = deps.senderLookbackBlocks ?? DEFAULT_SENDER_LOOKBACK_BLOCKS;
  const isSendingSide = (txData: TransactionData): boolean => txData.sendingChainId === params.senderChainId;
  const events = await findTransferEvents({
    provider,
    transactionManager: tm,
    user: params.user,
    router: deps.routerAddress,
    transactionId: params.transactionId,
    kinds: ["prepared"],
    fromBlock: Math.max(0, head - lookback + 1),
    toBlock: head,
    stopWhen: (found) => found.some((e) => isSendingSide(e.txData)),
    onUndecodable: (log) =>
      deps.logger.error("undecodable TransactionManager log skipped", {
        at: "admin.cancelSender",
        ...undecodableLogFields(log),
      }),
  });
  return events
    .map((e) => e.txData)
    .filter(isSendingSide)
    .reverse();
}

/**
 * With a receiving prepare recorded, the refund goes through, forced or not, only when that prepare can no longer
 * take effect: the receiving side cancelled on chain, or not prepared while the prepare's own transaction was mined
 * reverted for good (the same proof the submitter's cancel-sender demands before it replaces the decision; it runs
 * it again). Unforced, the check's own refusals answer (receiver_live, ...); forced, every refusal is
 * receiver_prepare_decided, since `force` would otherwise be the advice.
 */
async function assertRecordedPrepareOver(
  deps: CancelSenderDeps,
  sender: PreparedSender,
  force: boolean,
  logger: Logger,
): Promise<void> {
  const message =
    'a receiving prepare is recorded for this transfer and the receiving chain shows it neither cancelled nor reverted for good; its transaction may still land ("force" does not override this)';
  let receiverState: string;
  try {
    receiverState = await decisionRead(() => assertCancelSafe(deps, sender));
  } catch (err) {
    if (force && !(err instanceof ChainUnavailableError)) {
      throw new ReceiverPrepareDecidedError(`${message}; the check refused with ${errorCode(err)}`);
    }
    throw err;
  }
  if (receiverState === "cancelled") {
    return;
  }
  if (receiverState !== "not-prepared") {
    throw new ReceiverPrepareDecidedError(`${message}; the receiving side is ${receiverState}`);
  }
  const { txData } = sender;
  // assertCancelSafe judged this chain configured: "not-prepared" comes only from its reads.
  const receivingChain = deps.config.chainConfig[String(txData.receivingChainId)];
  const proof = await decisionRead(() =>
    proveReceivingPrepareReverted({
      redis: deps.redis,
      prefix: deps.config.redisPrefix,
      receiving: {
        transactionManager: receivingChain.transactionManagerAddress,
        confirmations: receivingChain.confirmations,
        provider: deps.readProvider(txData.receivingChainId),
      },
      txData,
    }),
  );
  switch (proof.kind) {
    case "final":
      logger.warn("the recorded receiving prepare reverted for good: the refund may replace it", {
        at: "admin.cancelSender",
        transactionId: txData.transactionId,
        receivingChainId: txData.receivingChainId,
        revertedHash: proof.transactionHash,
        revertedBlock: proof.blockNumber,
      });
      return;
    case "not-final":
      throw new ReceiverPrepareRevertNotFinalError(
        `the recorded receiving prepare ${proof.transactionHash} reverted ${proof.depth} of ${proof.required} blocks deep on chain ${txData.receivingChainId}: a re-org could still mine it; ask again once it is ${proof.required} deep`,
        { transactionHash: proof.transactionHash, depth: proof.depth, required: proof.required },
      );
    case "none":
      throw new ReceiverPrepareDecidedError(`${message}; ${proof.detail}`);
  }
}

/** Throws the refusal of the on-chain check; returns the receiving side's state it judged by. */
async function assertCancelSafe(deps: CancelSenderDeps, sender: PreparedSender): Promise<string> {
  const { txData } = sender;
  const receivingChainId = txData.receivingChainId;
  const receivingChain = deps.config.chainConfig[String(receivingChainId)];
  const verdict = await checkSenderCancelOnChain({
    txData,
    sendingProvider: sender.provider,
    sendingNowSec: sender.nowSec,
    receiving: receivingChain
      ? { provider: deps.readProvider(receivingChainId), transactionManager: receivingChain.transactionManagerAddress }
      : undefined,
    receiverPrepareInFlight: () =>
      queueCall(() =>
        findPrepareReceiverInFlight({
          queue: deps.queueFor(receivingChainId),
          redis: deps.redis,
          prefix: deps.config.redisPrefix,
          receivingChainId,
          transactionId: txData.transactionId,
          user: txData.user,
        }),
      ),
  });
  if (!verdict.ok) {
    throw refusal(verdict);
  }
  return verdict.receiverState;
}

function refusal(verdict: Extract<SenderCancelVerdict, { ok: false }>): RouterError {
  return senderCancelRefusalError(verdict, {
    forceHint: '; "force": true cancels anyway and the router then bears the loss',
  });
}

const DECISION_ERRORS = [
  TransactionNotFoundError,
  SenderNotPreparedError,
  ReceiverLiveError,
  ReceiverFulfilledError,
  ReceiverNotCancelledError,
  ReceiverBeingPreparedError,
  ReceiverStateUnknownError,
  ReceiverPrepareDecidedError,
  ReceiverPrepareRevertNotFinalError,
  ReceiverUnverifiableError,
  SenderTooNewError,
  QueueUnavailableError,
];

/**
 * Chain reads behind the decision: a failure (no provider, a lagging one, a scan too large) is a 503 with
 * nothing enqueued. Its message names only the code: provider errors may carry RPC URLs with API keys.
 */
async function decisionRead<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (DECISION_ERRORS.some((kind) => err instanceof kind)) {
      throw err;
    }
    throw new ChainUnavailableError(
      `could not read the chain state the decision needs (${errorCode(err)}); nothing was enqueued`,
      {},
      { cause: err },
    );
  }
}

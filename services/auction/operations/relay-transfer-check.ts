import { readSideState, type SideState } from "../../../shared/chain/side-state";
import { TransferMismatchError } from "../../../shared/protocol/errors";
import type { FulfillMetaTx } from "../../../shared/protocol/metatx-request";
import { transactionDataMismatches } from "../../../shared/protocol/metatx-request";
import type { TransferRecord } from "../../../shared/protocol/types";
import { sameHex } from "../../../shared/protocol/values";
import { findOwnReceivingPrepare } from "../../../shared/coordination/own-receiving-prepare";
import { withTimeout } from "../../../shared/timing";
import type { AuctionContext } from "../context";
import {
  ReceiverPrepareNotVisibleError,
  RelayChainUnavailableError,
  RelayQueueUnavailableError,
  TransferExpiredError,
  TransferNotPreparedError,
  UnknownTransferError,
} from "./relay-errors";

/** One Redis read on the request path; Redis is local, so a slow answer means it is in trouble. */
export const STORE_READ_TIMEOUT_MS = 2_000;

/** Where the receiving side the relay acts on was proven: the poller's record, or the chain itself. */
export type RelaySideSource = "store" | "chain";

/**
 * The relay decision (docs/relaying.md, step 7): relay only transfers this router carries, in the state the
 * request claims.
 * 1. The receiving-side record the receiving chain's poller wrote, when there is one: it must be Prepared, name
 *    our router and equal the request's txData field by field; not expired by the receiving chain's clock as
 *    its poller last saw it (the wall clock if no head is stored). No RPC.
 * 2. No record yet (the poller has not stored the router's own prepare): the request must name our router, and
 *    the router's own records must show it prepares this very transfer (decision "prepare", the prepare-receiver
 *    job on this chain naming the same invariant, that job live or its transaction sending or confirmed:
 *    shared/coordination/own-receiving-prepare.ts). Otherwise UNKNOWN_TRANSFER at once, with no RPC.
 * 3. Only then the chain: `variantTransactionData(invariantDigest)` must equal the request's (amount, expiry,
 *    preparedBlockNumber), which proves the on-chain receiving side is the request's txData (only our router can
 *    prepare a receiving side naming it); not expired by the chain's latest block. Not prepared yet is
 *    RECEIVER_PREPARE_NOT_VISIBLE, which relay-fulfill retries for a bounded time.
 */
export async function checkRelayedTransfer(ctx: AuctionContext, request: FulfillMetaTx): Promise<RelaySideSource> {
  const { txData } = request;
  const context = { transactionId: txData.transactionId, chainId: request.chainId };
  const [record, head] = await storeRead(() =>
    Promise.all([
      ctx.transfers.get(request.chainId, txData.transactionId, txData.user),
      ctx.transfers.getHead(request.chainId),
    ]),
  );
  if (record) {
    checkRecordedSide(ctx, request, record);
    assertNotExpired(request, head?.timestamp ?? Math.floor(ctx.nowMs() / 1000));
    return "store";
  }
  if (!sameHex(txData.router, ctx.routerAddress)) {
    throw new UnknownTransferError("the transfer names another router", context);
  }
  const queue = ctx.txQueue(request.chainId);
  if (!queue) {
    throw new UnknownTransferError(`chain ${request.chainId} has no transaction queue on this router`, context);
  }
  const own = await storeRead(() =>
    findOwnReceivingPrepare({
      queue,
      redis: ctx.redis,
      prefix: ctx.config.redisPrefix,
      receivingChainId: request.chainId,
      txData,
    }),
  );
  if (own.kind === "none") {
    throw new UnknownTransferError("this router has no receiving-side record or prepare of the transfer", context);
  }
  if (own.kind === "other-transfer") {
    throw new TransferMismatchError("txData names another transfer than this router's receiving prepare", context);
  }
  const state = await chainRead(ctx, request);
  switch (state.classification) {
    case "not-prepared":
      throw new ReceiverPrepareNotVisibleError(
        `this router's receiving prepare is not visible yet (${own.evidence}; chain block ${state.blockNumber})`,
        { ...context, blockNumber: state.blockNumber },
      );
    case "completed":
      throw new TransferNotPreparedError("the receiving side is already fulfilled or cancelled on chain", {
        ...context,
        status: "completed",
      });
    case "mismatch":
      throw new TransferMismatchError(
        "txData differs from the receiving side on chain in amount, expiry or preparedBlockNumber",
        { ...context, fields: ["amount", "expiry", "preparedBlockNumber"] },
      );
    default:
      assertNotExpired(request, state.nowSec);
      return "chain";
  }
}

function checkRecordedSide(ctx: AuctionContext, request: FulfillMetaTx, record: TransferRecord): void {
  const { txData } = request;
  const context = { transactionId: txData.transactionId, chainId: request.chainId };
  if (record.status !== "Prepared") {
    throw new TransferNotPreparedError(`the receiving side is already ${record.status}`, {
      ...context,
      status: record.status,
    });
  }
  if (!sameHex(record.txData.router, ctx.routerAddress)) {
    throw new TransferMismatchError("the transfer names another router", context);
  }
  const mismatches = transactionDataMismatches(record.txData, txData);
  if (mismatches.length > 0) {
    throw new TransferMismatchError(`txData differs from the recorded receiving side in ${mismatches.join(", ")}`, {
      ...context,
      fields: mismatches,
    });
  }
}

function assertNotExpired(request: FulfillMetaTx, nowSec: number): void {
  const { txData } = request;
  if (nowSec > txData.expiry) {
    throw new TransferExpiredError(`the receiving side expired at ${txData.expiry} (chain time ${nowSec})`, {
      transactionId: txData.transactionId,
      chainId: request.chainId,
      expiry: txData.expiry,
    });
  }
}

/** The receiving side on chain, from the auction's provider of that chain; any read failure is retriable. */
async function chainRead(ctx: AuctionContext, request: FulfillMetaTx): Promise<SideState> {
  const chain = ctx.config.chainConfig[String(request.chainId)];
  const provider = ctx.chainProvider(request.chainId);
  const context = { transactionId: request.txData.transactionId, chainId: request.chainId };
  if (!chain || !provider) {
    throw new RelayChainUnavailableError(`no provider for chain ${request.chainId}`, context);
  }
  try {
    return await readSideState(provider, chain.transactionManagerAddress, request.txData);
  } catch (err) {
    throw new RelayChainUnavailableError(`chain ${request.chainId} could not be read`, context, { cause: err });
  }
}

async function storeRead<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await withTimeout(read(), STORE_READ_TIMEOUT_MS);
  } catch (err) {
    throw new RelayQueueUnavailableError("the transfer store did not answer; nothing was relayed", {}, { cause: err });
  }
}

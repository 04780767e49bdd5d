import type { FulfillMetaTx } from "../../../shared/protocol/metatx-request";
import { transactionDataMismatches } from "../../../shared/protocol/metatx-request";
import { sameHex } from "../../../shared/protocol/values";
import { withTimeout } from "../../../shared/queues/wait-for-broadcast";
import type { AuctionContext } from "../context";
import {
  RelayQueueUnavailableError,
  TransferExpiredError,
  TransferMismatchError,
  TransferNotPreparedError,
  UnknownTransferError,
} from "./relay-errors";

/** One Redis read on the request path; Redis is local, so a slow answer means it is in trouble. */
export const STORE_READ_TIMEOUT_MS = 2_000;

/**
 * The relay decision (docs/relaying.md): relay only transfers this router carries, in the state the request
 * claims. The receiving-side record the receiving chain's poller wrote must exist, be Prepared, name our
 * router and equal the request's txData field by field; the receiving side must not be expired by the
 * receiving chain's clock as its poller last saw it (the wall clock if no head is stored). No RPC: the
 * submitter reads the chain itself before it sends.
 */
export async function checkRelayedTransfer(ctx: AuctionContext, request: FulfillMetaTx): Promise<void> {
  const { txData } = request;
  const context = { transactionId: txData.transactionId, chainId: request.chainId };
  const [record, head] = await storeRead(() =>
    Promise.all([
      ctx.transfers.get(request.chainId, txData.transactionId, txData.user),
      ctx.transfers.getHead(request.chainId),
    ]),
  );
  if (!record) {
    throw new UnknownTransferError("this router has no receiving-side record of the transfer", context);
  }
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
  const nowSec = head?.timestamp ?? Math.floor(ctx.nowMs() / 1000);
  if (nowSec > txData.expiry) {
    throw new TransferExpiredError(`the receiving side expired at ${txData.expiry} (chain time ${nowSec})`, {
      ...context,
      expiry: txData.expiry,
    });
  }
}

async function storeRead<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await withTimeout(read(), STORE_READ_TIMEOUT_MS);
  } catch (err) {
    throw new RelayQueueUnavailableError("the transfer store did not answer; nothing was relayed", {}, { cause: err });
  }
}

import type { ChainProvider } from "../chain/chain-provider";
import { decodeTmLogs, isTransferEvent, undecodableLogFields, type TmEvent } from "../chain/tm-log-decoder";
import type { RouterConfig } from "../config/types";
import { RouterError, errorClass } from "../errors";
import type { LedgerPool } from "./database";
import type { Logger } from "../logging/create-logger";
import { gasFiguresOf, usdOf, usdPerToken } from "../protocol/ledger";
import type { BookTransactionJobData, LedgerTxKind } from "../queues/ledger-jobs";
import { readRawReceipt, readTransactionValue, type RawReceipt } from "./chain-reads";
import { bookRows, type BookResult, type EventRow, type TransactionRow } from "./ledger-writer";
import type { LedgerPricer, PricePoint } from "./prices";

/** The chain does not show the transaction as mined and confirmed yet (or a lagging node): look again later. */
export class ReceiptNotReadyError extends errorClass(RouterError, "LEDGER_RECEIPT_NOT_READY", "retriable") {}

/** The job names a chain this router does not run: nothing can ever be booked for it. */
export class LedgerJobRefusedError extends errorClass(RouterError, "LEDGER_JOB_REFUSED", "terminal") {}

export type BookOutcome = "booked" | "known" | "not_ours";

export interface BookTransactionDeps {
  readonly config: RouterConfig;
  readonly pool: LedgerPool;
  readonly providerFor: (chainId: number) => ChainProvider;
  readonly decimals: (chainId: number, assetId: string) => Promise<number>;
  readonly pricer: LedgerPricer;
  /** The router's signer: gas is the router's only when it sent the transaction. */
  readonly signer: string;
  /** The address the TransactionManager knows as the router (Router contract or signer). */
  readonly routerAddress: string;
  readonly logger: Logger;
}

export interface BookTransactionResult extends BookResult {
  readonly outcome: BookOutcome;
  readonly transaction?: TransactionRow;
}

/**
 * Books one mined transaction (docs/accounting.md). Every figure is the chain's: the producer only named it.
 *  1. The chain is configured; its receipt exists and has the chain's confirmations (else: not ready, later).
 *  2. The block: its time, and the same hash as the receipt's (else a re-org is under way: later).
 *  3. The TransactionManager's logs in it that name this router (another router's events are not ours).
 *  4. Gas: only when the router's signer sent it (receipt.from); gasUsed × effectiveGasPrice + l1Fee, reverted too;
 *     and the value it sent (msg.value), native that left the signer besides gas.
 *  5. Decimals and USD prices at the block's time (unknown → NULL, priced later).
 *  6. All rows in one database transaction, each inserted once (ON CONFLICT DO NOTHING).
 */
export async function bookTransaction(
  deps: BookTransactionDeps,
  job: BookTransactionJobData,
): Promise<BookTransactionResult> {
  const chain = deps.config.chainConfig[String(job.chainId)];
  if (chain === undefined) {
    throw new LedgerJobRefusedError(`chain ${job.chainId} is not in chainConfig`, { chainId: job.chainId });
  }
  const provider = deps.providerFor(job.chainId);

  // 1. The receipt, confirmed.
  const receipt = await readRawReceipt(provider, job.hash);
  if (receipt === null) {
    throw new ReceiptNotReadyError("no receipt yet", { chainId: job.chainId, hash: job.hash });
  }
  const blockNumber = Number(BigInt(receipt.blockNumber));
  const head = await provider.getBlockNumber();
  if (head < blockNumber + chain.confirmations - 1) {
    throw new ReceiptNotReadyError("not confirmed yet", { chainId: job.chainId, hash: job.hash, blockNumber, head });
  }

  // 2. The block.
  const block = await provider.getBlock(blockNumber);
  if (block === null || block.hash?.toLowerCase() !== receipt.blockHash.toLowerCase()) {
    throw new ReceiptNotReadyError("the receipt's block is not the chain's block at that height (re-org)", {
      chainId: job.chainId,
      hash: job.hash,
      blockNumber,
    });
  }
  const point: PricePoint = { chainId: job.chainId, blockNumber, time: block.timestamp };

  // 3. This router's TransactionManager events.
  const ours = ourEvents(deps, receipt, chain.transactionManagerAddress);

  // 4. Gas, when the router's signer paid it.
  const paidByRouter = receipt.from.toLowerCase() === deps.signer.toLowerCase();
  let transaction: TransactionRow | undefined;
  if (paidByRouter) {
    const gas = gasFiguresOf(receipt);
    const valueWei = await readTransactionValue(provider, job.hash);
    if (valueWei === null) {
      throw new ReceiptNotReadyError("the node has the receipt but not the transaction", {
        chainId: job.chainId,
        hash: job.hash,
      });
    }
    const nativePrice = await deps.pricer.native(point);
    const transferIds = [...new Set(ours.filter(isTransferEvent).map((e) => e.txData.transactionId.toLowerCase()))];
    transaction = {
      chainId: job.chainId,
      hash: job.hash,
      kind: job.kind ?? kindFromEvents(ours, job.chainId),
      from: receipt.from.toLowerCase(),
      to: receipt.to?.toLowerCase() ?? null,
      blockNumber,
      blockHash: receipt.blockHash.toLowerCase(),
      blockTime: block.timestamp,
      ...gas,
      valueWei,
      transactionId: job.transactionId?.toLowerCase() ?? (transferIds.length === 1 ? transferIds[0] : null),
      requestId: job.requestId ?? null,
      source: job.source,
      nativePriceUsd: nativePrice === undefined ? null : usdPerToken(nativePrice),
      costUsd: nativePrice === undefined ? null : usdOf(gas.costWei, 18, nativePrice),
    };
  }

  if (transaction === undefined && ours.length === 0) {
    deps.logger.info("ledger: nothing of this router's in the transaction; nothing booked", {
      at: "ledger.book",
      chainId: job.chainId,
      hash: job.hash,
      source: job.source,
    });
    return { outcome: "not_ours", transactionInserted: false, insertedEvents: [] };
  }

  // 5. Decimals and prices of the events.
  const events = await Promise.all(ours.map((event) => eventRow(deps, point, event)));

  // 6. One database transaction.
  const result = await bookRows(deps.pool, { transaction, events });
  const outcome: BookOutcome = result.transactionInserted || result.insertedEvents.length > 0 ? "booked" : "known";
  return { ...result, outcome, transaction };
}

function ourEvents(deps: BookTransactionDeps, receipt: RawReceipt, transactionManager: string): TmEvent[] {
  const tm = transactionManager.toLowerCase();
  const router = deps.routerAddress.toLowerCase();
  const logs = receipt.logs
    .filter((log) => log.address.toLowerCase() === tm)
    .map((log) => ({
      topics: log.topics,
      data: log.data,
      blockNumber: Number(BigInt(log.blockNumber)),
      transactionHash: log.transactionHash,
      index: Number(BigInt(log.logIndex)),
    }));
  const { events, undecodable } = decodeTmLogs(logs);
  for (const log of undecodable) {
    deps.logger.warn("ledger: undecodable TransactionManager log skipped", {
      at: "ledger.book",
      ...undecodableLogFields(log),
    });
  }
  return events.filter((e) => (isTransferEvent(e) ? e.txData.router : e.router).toLowerCase() === router);
}

/** The job's kind when the producer gave none: what the router's own transaction did, read from its events. */
function kindFromEvents(events: readonly TmEvent[], chainId: number): LedgerTxKind | null {
  const event = events[0];
  if (event === undefined) return null;
  switch (event.kind) {
    case "prepared":
      return "prepare";
    case "cancelled":
      return "cancel";
    case "fulfilled":
      // The router claims on the sending chain; a fulfill it sent on the receiving chain is a relayed user's.
      return event.txData.sendingChainId === chainId ? "fulfill" : "relay";
    case "liquidityAdded":
      return "add-liquidity";
    case "liquidityRemoved":
      return "remove-liquidity";
  }
}

async function eventRow(deps: BookTransactionDeps, point: PricePoint, event: TmEvent): Promise<EventRow> {
  const base = {
    chainId: point.chainId,
    txHash: event.transactionHash,
    logIndex: event.logIndex,
    blockNumber: event.blockNumber,
    blockTime: point.time,
  };
  if (!isTransferEvent(event)) {
    const decimals = await deps.decimals(point.chainId, event.assetId);
    const price = await deps.pricer.asset(point, event.assetId);
    return {
      ...base,
      event: event.kind,
      side: null,
      router: event.router.toLowerCase(),
      assetId: event.assetId.toLowerCase(),
      assetDecimals: decimals,
      amount: event.amount,
      relayerFee: null,
      // LiquidityAdded's caller paid it in; LiquidityRemoved's recipient was paid (reconciliation reads both).
      caller: event.kind === "liquidityAdded" ? event.counterparty.toLowerCase() : null,
      recipient: event.kind === "liquidityRemoved" ? event.counterparty.toLowerCase() : null,
      transactionId: null,
      user: null,
      sendingChainId: null,
      sendingAssetId: null,
      receivingChainId: null,
      receivingAssetId: null,
      receivingAddress: null,
      expiry: null,
      preparedBlockNumber: null,
      assetPriceUsd: price === undefined ? null : usdPerToken(price),
      amountUsd: price === undefined ? null : usdOf(BigInt(event.amount), decimals, price),
      relayerFeeUsd: null,
    };
  }
  const tx = event.txData;
  const side = tx.sendingChainId === point.chainId ? "sending" : "receiving";
  const assetId = side === "sending" ? tx.sendingAssetId : tx.receivingAssetId;
  const decimals = await deps.decimals(point.chainId, assetId);
  const price = await deps.pricer.asset(point, assetId);
  const relayerFee = event.kind === "fulfilled" ? event.relayerFee : null;
  return {
    ...base,
    event: event.kind,
    side,
    router: tx.router.toLowerCase(),
    assetId: assetId.toLowerCase(),
    assetDecimals: decimals,
    amount: tx.amount,
    relayerFee,
    caller: event.caller.toLowerCase(),
    transactionId: tx.transactionId.toLowerCase(),
    user: tx.user.toLowerCase(),
    sendingChainId: tx.sendingChainId,
    sendingAssetId: tx.sendingAssetId.toLowerCase(),
    receivingChainId: tx.receivingChainId,
    receivingAssetId: tx.receivingAssetId.toLowerCase(),
    receivingAddress: tx.receivingAddress.toLowerCase(),
    recipient: null,
    expiry: tx.expiry,
    preparedBlockNumber: tx.preparedBlockNumber,
    assetPriceUsd: price === undefined ? null : usdPerToken(price),
    amountUsd: price === undefined ? null : usdOf(BigInt(tx.amount), decimals, price),
    relayerFeeUsd: price === undefined || relayerFee === null ? null : usdOf(BigInt(relayerFee), decimals, price),
  };
}

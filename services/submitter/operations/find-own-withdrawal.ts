import { getAddress, zeroPadValue } from "ethers";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { TM_TOPICS } from "../../../shared/chain/tm-log-decoder";
import {
  LOG_CHUNK_BLOCKS,
  LogRangeTooLargeError,
  MAX_LOG_CHUNKS,
  firstBlockAtOrAfter,
} from "../../../shared/chain/transfer-events";
import type { Logger } from "../../../shared/logging/create-logger";
import type { RemoveLiquidityJobData } from "../../../shared/queues";
import type { TxRecordStore } from "../send/tx-record";
import { WITHDRAWAL_UNSETTLED_RETRY_MS, WithdrawalUnsettledError } from "./errors";
import { unnamedInFlight } from "./unnamed-in-flight";

/**
 * A job's withdrawal may be mined in a block whose timestamp trails the job's creation by the chain's clock lag;
 * the search starts this much earlier. The price: an identical withdrawal mined that shortly before the job was
 * created counts as the job's own (the job then completes without paying, never twice).
 */
export const WITHDRAWAL_SEARCH_SLACK_SEC = 300;

export interface OwnWithdrawalContext {
  readonly provider: Pick<ChainProvider, "read" | "getBlockNumber" | "getBlock" | "getTransactionCount">;
  readonly records: Pick<TxRecordStore, "unnamedNonces">;
  /** The signer: the sender of every transaction of the router on this chain. */
  readonly from: string;
  readonly transactionManager: string;
  /** The `router` of the LiquidityRemoved event: the Router contract in router-contract mode, else the signer. */
  readonly router: string;
  /** Router-contract mode pays the contract's own recipient: the job's recipientAddress is not in the event. */
  readonly matchRecipient: boolean;
  readonly logger: Logger;
}

export interface OwnWithdrawal {
  readonly transactionHash: string;
  readonly blockNumber: number;
}

/**
 * Before a withdrawal with no send record builds a transaction: is it already on chain? The contract pays a
 * second removeLiquidity as readily as the first, and a record can be missing although the withdrawal was sent
 * (a Redis failover promoted a replica without it; a finished job retried after its record went). So:
 * 1. every transaction of the signer in flight (nonces from the latest to the pending count) must be named by a
 *    send record (the nonce-jobs index); an unnamed one may be this withdrawal, so the job waits until they are
 *    mined (WITHDRAWAL_UNSETTLED, parked without spending an attempt);
 * 2. the TransactionManager's LiquidityRemoved logs of this router and asset, from the job's creation (less
 *    WITHDRAWAL_SEARCH_SLACK_SEC) to the head, are searched for the job's amount and recipient: the first match
 *    is the job's withdrawal, and nothing is sent.
 */
export async function findOwnWithdrawal(
  ctx: OwnWithdrawalContext,
  data: RemoveLiquidityJobData,
  createdAtMs: number,
): Promise<OwnWithdrawal | undefined> {
  await assertNoUnknownInFlight(ctx);
  const head = await ctx.provider.getBlockNumber();
  const fromBlock = await searchStart(ctx.provider, Math.floor(createdAtMs / 1000) - WITHDRAWAL_SEARCH_SLACK_SEC, head);
  const span = head - fromBlock + 1;
  if (span <= 0) {
    return undefined;
  }
  if (Math.ceil(span / LOG_CHUNK_BLOCKS) > MAX_LOG_CHUNKS) {
    throw new LogRangeTooLargeError(
      `the withdrawal's search from its creation spans ${span} blocks, more than ${MAX_LOG_CHUNKS} log requests`,
      { fromBlock, toBlock: head },
    );
  }
  const topics = [
    TM_TOPICS.liquidityRemoved,
    zeroPadValue(getAddress(ctx.router), 32),
    zeroPadValue(getAddress(data.assetId), 32),
  ];
  const isOwn = withdrawalMatcher(data, ctx.matchRecipient);
  for (let lo = fromBlock; lo <= head; lo += LOG_CHUNK_BLOCKS) {
    const hi = Math.min(head, lo + LOG_CHUNK_BLOCKS - 1);
    const logs = await ctx.provider.read(
      (p) => p.getLogs({ address: ctx.transactionManager, topics, fromBlock: lo, toBlock: hi }),
      "getLogs",
    );
    const own = logs.find((log) => isOwn(log.data));
    if (own) {
      return { transactionHash: own.transactionHash.toLowerCase(), blockNumber: own.blockNumber };
    }
  }
  return undefined;
}

/**
 * Whether a LiquidityRemoved log's data (`amount`, `recipient`: two ABI words; the indexed router and asset are in
 * the topics getLogs filtered on) is the job's withdrawal. The job's words are encoded once and each log's data
 * compared as text: a search reads every withdrawal of the router and asset since the job's creation, and decoding
 * each (with an address checksum, a keccak) was the largest CPU cost of the submitter's own code under
 * bench:submitter, in one synchronous loop per job (500 jobs each reading up to 500 withdrawals).
 */
export function withdrawalMatcher(data: RemoveLiquidityJobData, matchRecipient: boolean): (logData: string) => boolean {
  // ABI words: uint256 and address, left-padded to 32 bytes (the job's fields are validated: a decimal amount, an
  // address); built by hand, as ethers' encoder cost more per job than the comparisons.
  const word = (hex: string): string => hex.padStart(64, "0");
  const amountWord = `0x${word(BigInt(data.amount).toString(16))}`;
  const expected = `${amountWord}${word(data.recipientAddress.slice(2).toLowerCase())}`;
  return (logData) => {
    const body = logData.toLowerCase();
    return matchRecipient ? body === expected : body.length === expected.length && body.startsWith(amountWord);
  };
}

/**
 * The first block at or after `timestampSec` rounded down to the minute (a little more slack), memoised per provider
 * for the last few minutes asked: jobs created together (an operator's batch, a bench) share one binary search of
 * about log2(head) block reads instead of one each.
 */
async function searchStart(
  provider: Pick<ChainProvider, "getBlock">,
  timestampSec: number,
  head: number,
): Promise<number> {
  const minute = timestampSec - (timestampSec % 60);
  let memo = startMemo.get(provider);
  if (!memo) {
    memo = new Map();
    startMemo.set(provider, memo);
  }
  const known = memo.get(minute);
  if (known !== undefined && known <= head) {
    return known;
  }
  const block = await firstBlockAtOrAfter(provider, minute, head);
  if (block <= head) {
    // Only a block that exists is final: a minute with no block yet may still get one.
    memo.set(minute, block);
    if (memo.size > START_MEMO_SIZE) {
      memo.delete(memo.keys().next().value as number);
    }
  }
  return block;
}

const START_MEMO_SIZE = 16;
const startMemo = new WeakMap<object, Map<number, number>>();

/** Step 1. */
async function assertNoUnknownInFlight(ctx: OwnWithdrawalContext): Promise<void> {
  const { latest, pending, unnamed } = await unnamedInFlight(ctx.provider, ctx.records, ctx.from);
  if (unnamed.length > 0) {
    throw new WithdrawalUnsettledError(
      `${unnamed.length} transaction(s) of the signer in flight have no send record; one may be this withdrawal`,
      Date.now() + WITHDRAWAL_UNSETTLED_RETRY_MS,
      { latest, pending, unknownNonces: unnamed.slice(0, 10) },
    );
  }
}

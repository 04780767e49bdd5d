import { classifyVariant, invariantDigest, invariantOf, type VariantClassification } from "../protocol/digests";
import type { BlockTag } from "ethers";
import type { TransactionData } from "../protocol/types";
import type { ChainProvider } from "./chain-provider";
import { readVariantTransactionData } from "./router-balances";
import { blockTimestamp } from "./transfer-events";

export interface SideState {
  readonly classification: VariantClassification;
  readonly blockNumber: number;
  /** Timestamp of the latest block: the chain's "now" (the contract compares expiries with block.timestamp). */
  readonly nowSec: number;
}

/**
 * docs/protocol.md#sanitation-check of one side of `txData` on the chain behind `provider`, with the chain's time: the
 * stored `variantTransactionData(invariantDigest)` against `txData`'s own (amount, expiry, preparedBlockNumber).
 * Used by the submitter before it acts and by the auction before it relays a side its poller has not stored yet.
 * `variantAt` reads the variant at another block tag ("pending": what the node's mempool will do to it); the
 * time is always the latest block's.
 */
export async function readSideState(
  provider: Pick<ChainProvider, "call" | "getBlock" | "getBlockNumber">,
  transactionManager: string,
  txData: TransactionData,
  variantAt?: BlockTag,
): Promise<SideState> {
  const [actual, latest] = await Promise.all([
    readVariantTransactionData(provider, transactionManager, invariantDigest(invariantOf(txData)), variantAt),
    provider.getBlock("latest"),
  ]);
  const blockNumber = latest?.number ?? (await provider.getBlockNumber());
  const nowSec = latest?.timestamp ?? (await blockTimestamp(provider, "latest"));
  return { classification: classifyVariant(actual, txData), blockNumber, nowSec };
}

import type { EventRow, TransactionRow } from "../../shared/ledger/ledger-writer";

/** The ledger tests' swap: USDC (6 decimals) sent on 1337, DAI (18 decimals) received on 1338. */
export const USDC = "0x00000000000000000000000000000000000000c6";
export const DAI = "0x00000000000000000000000000000000000000d1";
export const SWAP_ID = `0x${"5e".repeat(32)}`;
const USER = "0x5256000000000000000000000000000000005baa";

export interface SwapEventParams {
  readonly side: "sending" | "receiving";
  readonly event: EventRow["event"];
  /** Log index; the block is 10 + n and the transaction hash is derived from it. */
  readonly n: number;
  /** The router's address (the event's router and caller). */
  readonly router: string;
  readonly blockTime: number;
  readonly expiry: number;
  /** The event's amount in the side's asset base units. */
  readonly amount: string;
  /** For a fulfilled event. */
  readonly relayerFee: string;
  /** USD at the event's time; null where the ledger had no price. */
  readonly usd: { readonly price: string; readonly amount: string; readonly relayerFee: string } | null;
}

/** One TransactionManager event of the swap, as the ledger's writer books it (bookRows). */
export function swapEventRow(p: SwapEventParams): EventRow {
  const sending = p.side === "sending";
  const fulfilled = p.event === "fulfilled";
  return {
    chainId: sending ? 1337 : 1338,
    txHash: `0x${String(p.n).padStart(2, "0").repeat(32)}`,
    logIndex: p.n,
    blockNumber: 10 + p.n,
    blockTime: p.blockTime,
    event: p.event,
    side: p.side,
    router: p.router,
    assetId: sending ? USDC : DAI,
    assetDecimals: sending ? 6 : 18,
    amount: p.amount,
    relayerFee: fulfilled ? p.relayerFee : null,
    caller: p.router,
    transactionId: SWAP_ID,
    user: USER,
    sendingChainId: 1337,
    sendingAssetId: USDC,
    receivingChainId: 1338,
    receivingAssetId: DAI,
    receivingAddress: USER,
    expiry: p.expiry,
    preparedBlockNumber: 10,
    assetPriceUsd: p.usd?.price ?? null,
    amountUsd: p.usd?.amount ?? null,
    relayerFeeUsd: fulfilled ? (p.usd?.relayerFee ?? null) : null,
  };
}

/** A transaction of the router's signer on the swap, mined and not reverted, as the ledger books it (bookRows). */
export function signerTransactionRow(
  p: Pick<
    TransactionRow,
    | "chainId"
    | "hash"
    | "kind"
    | "from"
    | "blockNumber"
    | "blockHash"
    | "blockTime"
    | "gasUsed"
    | "effectiveGasPrice"
    | "l1FeeWei"
  >,
): TransactionRow {
  return {
    ...p,
    to: null,
    costWei: p.gasUsed * p.effectiveGasPrice + p.l1FeeWei,
    valueWei: 0n,
    reverted: false,
    transactionId: SWAP_ID,
    requestId: null,
    source: "submitter",
    nativePriceUsd: null,
    costUsd: null,
  };
}

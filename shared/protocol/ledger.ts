import { formatUnits } from "ethers";
import { ProtocolInputError } from "./errors";

/**
 * The ledger's pure rules (docs/accounting.md): what a receipt costs, what a swap earned, and its USD figures.
 * No I/O: the ledger process books with these, the admin API answers with them.
 */

/** What gas a receipt records as paid; every figure in wei, as read from the chain. */
export interface GasFigures {
  readonly gasUsed: bigint;
  readonly effectiveGasPrice: bigint;
  /** The L1 data fee an OP-stack chain's receipt carries (`l1Fee`); 0 elsewhere. */
  readonly l1FeeWei: bigint;
  /** gasUsed × effectiveGasPrice + l1FeeWei. Never cumulativeGasUsed (that is the block's running total). */
  readonly costWei: bigint;
  readonly reverted: boolean;
}

/** The fields of a raw `eth_getTransactionReceipt` answer the cost is read from (hex quantities). */
export interface RawReceiptGas {
  readonly gasUsed?: unknown;
  readonly effectiveGasPrice?: unknown;
  readonly l1Fee?: unknown;
  readonly status?: unknown;
}

function quantity(value: unknown, field: string): bigint {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]+$/.test(value)) {
    throw new ProtocolInputError(`receipt ${field} is not a hex quantity`, { field, value: String(value) });
  }
  return BigInt(value);
}

/** The cost of a mined transaction from its raw receipt. A receipt without effectiveGasPrice is refused (pre-London nodes). */
export function gasFiguresOf(receipt: RawReceiptGas): GasFigures {
  const gasUsed = quantity(receipt.gasUsed, "gasUsed");
  const effectiveGasPrice = quantity(receipt.effectiveGasPrice, "effectiveGasPrice");
  const l1FeeWei = receipt.l1Fee === undefined || receipt.l1Fee === null ? 0n : quantity(receipt.l1Fee, "l1Fee");
  return {
    gasUsed,
    effectiveGasPrice,
    l1FeeWei,
    costWei: gasUsed * effectiveGasPrice + l1FeeWei,
    reverted: quantity(receipt.status, "status") === 0n,
  };
}

/** USD (a decimal string, exact) of `amount` base units at `priceE18` (oracle: USD × 1e18 per whole token). */
export function usdOf(amount: bigint, decimals: number, priceE18: bigint): string {
  return formatUnits(amount * priceE18, decimals + 18);
}

/** USD per whole token, a decimal string, from the oracle's USD × 1e18. */
export function usdPerToken(priceE18: bigint): string {
  return formatUnits(priceE18, 18);
}

/** `amount` in `from` decimals as `to` decimals, truncating (the auction's rule, docs/protocol.md#router-fee). */
export function normaliseDecimals(amount: bigint, from: number, to: number): bigint {
  return (amount * 10n ** BigInt(to)) / 10n ** BigInt(from);
}

// ---- the swap view ---------------------------------------------------------------------------------------

export type SwapStatus = "prepared" | "fulfilled" | "claimed" | "cancelled";
export type SwapTxKind = "prepare" | "fulfill" | "cancel" | "relay";

/** One booked TransactionManager transfer event of the swap (a ledger_events row). */
export interface SwapEventRow {
  readonly chainId: number;
  readonly event: "prepared" | "fulfilled" | "cancelled";
  readonly side: "sending" | "receiving";
  readonly user: string;
  readonly sendingChainId: number;
  readonly sendingAssetId: string;
  readonly receivingChainId: number;
  readonly receivingAssetId: string;
  readonly amount: string;
  readonly assetDecimals: number;
  readonly relayerFee?: string | null;
  readonly caller?: string | null;
  readonly assetPriceUsd?: string | null;
  readonly relayerFeeUsd?: string | null;
}

/** One transaction the router's signer paid for, booked against the swap (a ledger_transactions row). */
export interface SwapTransactionRow {
  readonly chainId: number;
  readonly kind: string | null;
  readonly hash: string;
  readonly gasUsed: string;
  readonly effectiveGasPrice: string;
  readonly l1FeeWei: string;
  readonly costWei: string;
  readonly reverted: boolean;
  readonly costUsd: string | null;
}

export interface SwapUsd {
  readonly feeEarned: number | null;
  readonly gasCost: number | null;
  readonly relayerFeeEarned: number | null;
  readonly net: number | null;
}

export interface SwapView {
  readonly transactionId: string;
  readonly user: string;
  readonly sendingChainId: number;
  readonly sendingAssetId: string;
  readonly receivingChainId: number;
  readonly receivingAssetId: string;
  readonly amountIn: string | null;
  readonly amountOut: string | null;
  readonly status: SwapStatus;
  readonly transactions: ReadonlyArray<Omit<SwapTransactionRow, "costUsd" | "kind"> & { kind: SwapTxKind | string }>;
  /** Receiving-asset base units; null until the swap is claimed, "0" when cancelled. */
  readonly feeEarned: string | null;
  /** Receiving-asset base units the router's signer earned relaying the user's fulfill; "0" when it did not. */
  readonly relayerFeeEarned: string;
  readonly usd: SwapUsd;
}

const USD_SCALE = 18;

/** A NUMERIC string as a scaled bigint (18 decimals, truncated), so sums stay exact until the final number. */
function scaledUsd(value: string): bigint {
  const [whole, fraction = ""] = value.replace(/^-/, "").split(".");
  const scaled =
    BigInt(whole || "0") * 10n ** BigInt(USD_SCALE) + BigInt((fraction + "0".repeat(USD_SCALE)).slice(0, USD_SCALE));
  return value.startsWith("-") ? -scaled : scaled;
}

function usdNumber(scaled: bigint | null): number | null {
  return scaled === null ? null : Number(formatUnits(scaled, USD_SCALE));
}

function find(
  events: readonly SwapEventRow[],
  side: SwapEventRow["side"],
  event: SwapEventRow["event"],
): SwapEventRow | undefined {
  return events.find((e) => e.side === side && e.event === event);
}

/** The swap's status from its booked events: claimed > cancelled > fulfilled > prepared. */
export function swapStatusOf(events: readonly SwapEventRow[]): SwapStatus {
  if (find(events, "sending", "fulfilled")) return "claimed";
  if (events.some((e) => e.event === "cancelled")) return "cancelled";
  if (find(events, "receiving", "fulfilled")) return "fulfilled";
  return "prepared";
}

/**
 * Fee earned in the receiving asset's base units: the sending amount claimed, normalised to the receiving
 * asset's decimals (truncating), minus the receiving amount the router locked. Null until claimed; "0" when cancelled.
 */
export function swapFeeEarned(events: readonly SwapEventRow[]): bigint | null {
  const status = swapStatusOf(events);
  if (status === "cancelled") return 0n;
  const claimed = find(events, "sending", "fulfilled");
  const locked = find(events, "receiving", "fulfilled") ?? find(events, "receiving", "prepared");
  if (status !== "claimed" || claimed === undefined || locked === undefined) return null;
  return normaliseDecimals(BigInt(claimed.amount), claimed.assetDecimals, locked.assetDecimals) - BigInt(locked.amount);
}

/**
 * The swap as the operator reads it (GET /ledger/<transactionId>). `signer` is the router's signer: a relayer
 * fee is the router's only when its signer sent the user's fulfill. Undefined when no transfer event is booked.
 */
export function swapViewOf(params: {
  readonly transactionId: string;
  readonly signer: string;
  readonly events: readonly SwapEventRow[];
  readonly transactions: readonly SwapTransactionRow[];
}): SwapView | undefined {
  const { events, transactions } = params;
  const first = events[0];
  if (first === undefined) return undefined;
  const sendingPrepared = find(events, "sending", "prepared");
  const receivingPrepared = find(events, "receiving", "prepared");
  const receivingFulfilled = find(events, "receiving", "fulfilled");
  const status = swapStatusOf(events);
  const feeEarned = swapFeeEarned(events);

  const relayedByUs =
    receivingFulfilled !== undefined &&
    (receivingFulfilled.caller ?? "").toLowerCase() === params.signer.toLowerCase() &&
    BigInt(receivingFulfilled.relayerFee ?? "0") > 0n;
  const relayerFeeEarned = relayedByUs ? BigInt(receivingFulfilled.relayerFee ?? "0") : 0n;

  // USD: each part null while any of its inputs is unpriced; never a silent 0.
  const receivingPrice = (receivingFulfilled ?? receivingPrepared)?.assetPriceUsd ?? null;
  const receivingDecimals = (receivingFulfilled ?? receivingPrepared)?.assetDecimals;
  let feeUsd: bigint | null = null;
  if (feeEarned === 0n) feeUsd = 0n;
  else if (feeEarned !== null && receivingPrice !== null && receivingDecimals !== undefined) {
    feeUsd = scaledUsd(usdOf(feeEarned, receivingDecimals, scaledUsd(receivingPrice)));
  }
  let relayerUsd: bigint | null = 0n;
  if (relayedByUs) {
    const fromRow = receivingFulfilled?.relayerFeeUsd;
    relayerUsd = fromRow === null || fromRow === undefined ? null : scaledUsd(fromRow);
  }
  const gasUsd = transactions.some((t) => t.costUsd === null)
    ? null
    : transactions.reduce((sum, t) => sum + scaledUsd(t.costUsd ?? "0"), 0n);
  const net = feeUsd === null || relayerUsd === null || gasUsd === null ? null : feeUsd + relayerUsd - gasUsd;

  return {
    transactionId: params.transactionId,
    user: first.user,
    sendingChainId: first.sendingChainId,
    sendingAssetId: first.sendingAssetId,
    receivingChainId: first.receivingChainId,
    receivingAssetId: first.receivingAssetId,
    amountIn: sendingPrepared?.amount ?? null,
    amountOut: receivingPrepared?.amount ?? null,
    status,
    transactions: transactions.map((t) => ({
      chainId: t.chainId,
      kind: t.kind ?? "unknown",
      hash: t.hash,
      gasUsed: t.gasUsed,
      effectiveGasPrice: t.effectiveGasPrice,
      l1FeeWei: t.l1FeeWei,
      costWei: t.costWei,
      reverted: t.reverted,
    })),
    feeEarned: feeEarned === null ? null : feeEarned.toString(),
    relayerFeeEarned: relayerFeeEarned.toString(),
    usd: {
      feeEarned: usdNumber(feeUsd),
      gasCost: usdNumber(gasUsd),
      relayerFeeEarned: usdNumber(relayerUsd),
      net: usdNumber(net),
    },
  };
}

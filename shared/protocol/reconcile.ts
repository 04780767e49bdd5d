/**
 * Reconciliation: the books checked against the chain (docs/accounting.md#reconciliation). Pure: the ledger
 * process reads the booked rows of a block range and the chain's state at the range's ends, and this module says
 * what the books expect the chain to show and how far the chain is from it.
 *
 * Two things are checked per chain over (fromBlock, toBlock]:
 *  - per asset, the TransactionManager's `routerBalances(router, asset)`: its change on chain against the sum of
 *    the booked events' effects on it (routerBalanceEffect);
 *  - the signer's native balance: its change on chain against − booked gas − the booked value of the signer's
 *    transactions + native the TransactionManager paid the signer (signerNativeEffect).
 */

export const NATIVE_ASSET = "0x0000000000000000000000000000000000000000";

/**
 * A difference at or below this many base units is not drift. 0: every figure here is an integer the chain
 * and the books both hold exactly, so any difference is a transaction the books are missing (or hold wrongly).
 */
export const RECONCILE_DUST = 0n;

/** The columns of a booked event that reconciliation reads. Addresses lower case; amounts decimal strings. */
export interface ReconcileEvent {
  readonly event: "prepared" | "fulfilled" | "cancelled" | "liquidityAdded" | "liquidityRemoved";
  readonly side: "sending" | "receiving" | null;
  readonly assetId: string;
  readonly amount: string;
  readonly relayerFee: string | null;
  /** msg.sender of a transfer event; LiquidityAdded's caller. */
  readonly caller: string | null;
  /** LiquidityRemoved's recipient (NULL on rows booked before the column existed). */
  readonly recipient: string | null;
  /** The event's transaction was sent (and paid) by the router's signer: it is in ledger_transactions. */
  readonly paidBySigner: boolean;
  /**
   * That transaction's value is booked (ledger_transactions.value_wei, migration 3): the signer's outflow is then
   * counted from the transaction, not from this event. False on rows booked before the column.
   */
  readonly valueBooked: boolean;
}

/**
 * What one booked event did to `routerBalances[router][asset]` on its chain, read from TransactionManager.sol:
 *  - receiving `prepare`: − amount (the router locks its liquidity for the user);
 *  - sending `fulfill` (the router's claim): + amount (the user's locked amount credited to the router);
 *  - receiving `cancel`: + amount (the locked liquidity returned);
 *  - `addLiquidity` / `addLiquidityFor`: + amount (as received: the event's amount);
 *  - `removeLiquidity`: − amount.
 * Nothing else moves it: a sending prepare locks the user's funds, not the router's; a receiving fulfill pays
 * the user (and its relayer fee to msg.sender) out of the amount already taken at prepare; a sending cancel
 * returns the user's funds to their fallback address.
 */
export function routerBalanceEffect(e: ReconcileEvent): bigint {
  const amount = BigInt(e.amount);
  switch (e.event) {
    case "prepared":
      return e.side === "receiving" ? -amount : 0n;
    case "fulfilled":
      return e.side === "sending" ? amount : 0n;
    case "cancelled":
      return e.side === "receiving" ? amount : 0n;
    case "liquidityAdded":
      return amount;
    case "liquidityRemoved":
      return -amount;
  }
}

/**
 * The native value (not gas) one booked event moved into (+) or out of (−) the signer's account:
 *  - native liquidity added in a transaction the signer sent whose value is not booked (rows booked before
 *    migration 3): − amount (its msg.value); with the value booked, ledgerExpectation counts the value instead;
 *  - native liquidity removed to the signer: + amount;
 *  - a native receiving fulfill the signer relayed: + relayer fee (the contract pays msg.sender).
 * Not seen by the books, so drift when they happen: native sent to the signer from outside (a gas top-up), a
 * native receiving fulfill whose receiving address is the signer, a sending cancel whose fallback is the signer.
 */
export function signerNativeEffect(e: ReconcileEvent, signer: string): bigint {
  if (e.assetId.toLowerCase() !== NATIVE_ASSET) return 0n;
  const me = signer.toLowerCase();
  const amount = BigInt(e.amount);
  switch (e.event) {
    case "liquidityAdded":
      return e.paidBySigner && !e.valueBooked ? -amount : 0n;
    case "liquidityRemoved":
      return e.recipient?.toLowerCase() === me ? amount : 0n;
    case "fulfilled":
      return e.side === "receiving" && e.caller?.toLowerCase() === me ? BigInt(e.relayerFee ?? "0") : 0n;
    default:
      return 0n;
  }
}

/** The books' expectation for one chain over a range: per asset the change of routerBalances, and the signer's. */
export interface LedgerExpectation {
  /** asset (lower case) → change of routerBalances. */
  readonly routerBalances: ReadonlyMap<string, bigint>;
  /** − gas − native value sent + native received. */
  readonly signerNative: bigint;
  /** The booked gas alone (ledger_transactions.cost_wei), for the report. */
  readonly gasWei: bigint;
}

export function ledgerExpectation(params: {
  readonly events: readonly ReconcileEvent[];
  /** cost_wei of each booked transaction of the signer in the range. */
  readonly gasCosts: readonly string[];
  /**
   * value_wei of each booked transaction of the signer in the range (null: booked before the column). Native
   * the signer sent whoever the call credited: a native addLiquidityFor for another router (migrate-liquidity)
   * emits no event of this router, yet leaves the signer's balance.
   */
  readonly sentValues?: ReadonlyArray<string | null>;
  readonly signer: string;
}): LedgerExpectation {
  const routerBalances = new Map<string, bigint>();
  let native = 0n;
  for (const e of params.events) {
    const asset = e.assetId.toLowerCase();
    routerBalances.set(asset, (routerBalances.get(asset) ?? 0n) + routerBalanceEffect(e));
    native += signerNativeEffect(e, params.signer);
  }
  const gasWei = params.gasCosts.reduce((sum, cost) => sum + BigInt(cost), 0n);
  const sent = (params.sentValues ?? []).reduce<bigint>((sum, value) => sum + BigInt(value ?? 0), 0n);
  return { routerBalances, signerNative: native - gasWei - sent, gasWei };
}

/** The chain's state at one end of the range. */
export interface ChainSnapshot {
  readonly blockNumber: number;
  /** asset (lower case) → routerBalances(router, asset). */
  readonly routerBalances: ReadonlyMap<string, bigint>;
  readonly signerBalance: bigint;
}

export type ReconcileSubject = "router-balance" | "signer-native";

/** One line of a reconciliation: drift = actual − expected; flagged when |drift| is above dust. */
export interface ReconcileLine {
  readonly subject: ReconcileSubject;
  /** The asset; for signer-native, the native asset. */
  readonly assetId: string;
  /** The change the books explain. */
  readonly expected: bigint;
  /** The change the chain shows. */
  readonly actual: bigint;
  readonly drift: bigint;
  readonly flagged: boolean;
}

/**
 * The lines of one chain's reconciliation: every asset either end knows or the books moved, then the signer's
 * native balance. The snapshots must hold every asset of `expected` (the caller reads them).
 */
export function reconcileLines(params: {
  readonly start: ChainSnapshot;
  readonly end: ChainSnapshot;
  readonly expected: LedgerExpectation;
  readonly dust?: bigint;
}): ReconcileLine[] {
  const dust = params.dust ?? RECONCILE_DUST;
  const line = (subject: ReconcileSubject, assetId: string, expected: bigint, actual: bigint): ReconcileLine => {
    const drift = actual - expected;
    return { subject, assetId, expected, actual, drift, flagged: (drift < 0n ? -drift : drift) > dust };
  };
  const assets = [
    ...new Set([
      ...params.start.routerBalances.keys(),
      ...params.end.routerBalances.keys(),
      ...params.expected.routerBalances.keys(),
    ]),
  ].sort();
  const lines = assets.map((asset) => {
    const start = params.start.routerBalances.get(asset);
    const end = params.end.routerBalances.get(asset);
    if (start === undefined || end === undefined) {
      throw new RangeError(`reconcileLines: no routerBalances of ${asset} at both ends`);
    }
    return line("router-balance", asset, params.expected.routerBalances.get(asset) ?? 0n, end - start);
  });
  lines.push(
    line(
      "signer-native",
      NATIVE_ASSET,
      params.expected.signerNative,
      params.end.signerBalance - params.start.signerBalance,
    ),
  );
  return lines;
}

/**
 * Inventory against the operator's targets (docs/config.md, "Inventory targets"; docs/auction.md, "Inventory
 * decline"). Every swap takes liquidity on its receiving chain and gives it back on its sending chain, so a busy
 * route drains one side by design; these functions say how far each chain of a pool is from its target share,
 * what moves would restore the targets, and how much a receiving chain must keep for a bid to leave it at its
 * minimum. Pure: the figures come from Redis (shared/transfers/inventory-reads.ts), the decimals from the chain.
 */

/** Amounts of different decimals are compared in this many decimals (the pool's swap rate is 1:1 after decimals). */
export const COMMON_DECIMALS = 18;
/** Percents are handled as basis points (1 % = 100) so the arithmetic stays in integers. */
const BP_PER_PERCENT = 100;
const BP_WHOLE = 10_000n;

/**
 * Gas of the router-side steps of a move: `removeLiquidity` on the source chain and `addLiquidityFor` (an ERC20
 * `approve` first) on the destination, TransactionManager of @connext/nxtp-contracts 0.1.42. Upper figures: a
 * first deposit writes a fresh storage slot (20 000 gas) and the approve another.
 * test/integration/admin-inventory.test.ts checks them against the gas the real calls use on anvil.
 */
export const REMOVE_LIQUIDITY_GAS_LIMIT = 80_000n;
export const ADD_LIQUIDITY_GAS_LIMIT = 130_000n;

/** What one (pool, chain) holds and owes, in base units of the chain's pool asset. */
export interface ChainFigures {
  readonly chainId: number;
  readonly assetId: string;
  readonly decimals: number;
  /** The router's unlocked TransactionManager balance (the pollers' `routerBalances` reads). */
  readonly unlocked: bigint;
  /** Receiving sides the router prepared on this chain, not settled yet: on their way to users. */
  readonly locked: bigint;
  /** Bids promised on this chain, not prepared yet (hard holds of seen sending prepares included). */
  readonly promised: bigint;
  /** Sending sides on this chain whose amount the router will claim (users' funds locked to it). */
  readonly owed: bigint;
}

/** The operator's wish for one chain of a pool (config `swapPools[i].inventory`). */
export interface ChainTarget {
  readonly targetPercent: number;
  readonly minimumPercent: number;
  /** Base units of the chain's asset. */
  readonly floor: bigint;
}

export type InventoryState = "ok" | "low" | "critical";

export interface ChainInventory extends ChainFigures, ChainTarget {
  /**
   * unlocked + owed − promised, floored at 0: every swap in flight counted as done (its receiving side gone, its
   * sending side claimed). Locked amounts are already out of `unlocked`.
   */
  readonly total: bigint;
  /** `total` in COMMON_DECIMALS. */
  readonly totalCommon: bigint;
  /** This chain's part of the pool's total, percent to 4 decimals; undefined when the pool holds nothing. */
  readonly sharePercent: number | undefined;
  /**
   * `critical`: nothing unlocked, or unlocked − promised below the floor (what the router can still lock now);
   * `low`: share below `minimumPercent`; else `ok`.
   */
  readonly state: InventoryState;
}

export function toCommon(amount: bigint, decimals: number): bigint {
  return decimals <= COMMON_DECIMALS
    ? amount * 10n ** BigInt(COMMON_DECIMALS - decimals)
    : amount / 10n ** BigInt(decimals - COMMON_DECIMALS);
}

/** Common units to the chain's base units, rounded down (or up with `ceil`). */
export function fromCommon(amount: bigint, decimals: number, ceil = false): bigint {
  if (decimals >= COMMON_DECIMALS) return amount * 10n ** BigInt(decimals - COMMON_DECIMALS);
  const unit = 10n ** BigInt(COMMON_DECIMALS - decimals);
  return ceil ? (amount + unit - 1n) / unit : amount / unit;
}

function basisPoints(percent: number): bigint {
  return BigInt(Math.round(percent * BP_PER_PERCENT));
}

function sharePercentOf(part: bigint, whole: bigint): number | undefined {
  if (whole === 0n) return undefined;
  return Number((part * 1_000_000n) / whole) / 10_000;
}

/** One pool's chains against their targets. */
export function assessPool<T extends ChainFigures & ChainTarget>(chains: readonly T[]): Array<T & ChainInventory> {
  const totals = chains.map((c) => {
    const total = c.unlocked + c.owed > c.promised ? c.unlocked + c.owed - c.promised : 0n;
    return { total, totalCommon: toCommon(total, c.decimals) };
  });
  const poolCommon = totals.reduce((sum, t) => sum + t.totalCommon, 0n);
  return chains.map((c, i) => {
    const sharePercent = sharePercentOf(totals[i].totalCommon, poolCommon);
    const available = c.unlocked > c.promised ? c.unlocked - c.promised : 0n;
    let state: InventoryState = "ok";
    if (c.unlocked === 0n || available < c.floor) state = "critical";
    else if (sharePercent === undefined || sharePercent < c.minimumPercent) state = "low";
    return { ...c, ...totals[i], sharePercent, state };
  });
}

/**
 * What the receiving chain must still hold after a bid, in its base units, for the bid to be answered: its floor,
 * and the least `y` with `y / (others + incoming + y) ≥ minimum` (its share once the swap is done, the incoming
 * amount counted on the sending chain). `othersCommon`: the pool's other chains' totals; `incomingCommon`: the
 * request's sending amount; both COMMON_DECIMALS. A minimum of 100 % keeps everything (no bid).
 */
export function receivingKeep(p: {
  readonly othersCommon: bigint;
  readonly incomingCommon: bigint;
  readonly minimumPercent: number;
  readonly floor: bigint;
  readonly decimals: number;
}): bigint {
  const m = basisPoints(p.minimumPercent);
  if (m >= BP_WHOLE) return 2n ** 256n;
  const keepCommon = (m * (p.othersCommon + p.incomingCommon) + (BP_WHOLE - m) - 1n) / (BP_WHOLE - m);
  const keep = fromCommon(keepCommon, p.decimals, true);
  return keep > p.floor ? keep : p.floor;
}

export interface GasStep {
  readonly chainId: number;
  readonly method: "removeLiquidity" | "addLiquidityFor";
  readonly gasLimit: bigint;
  /** Wei per gas; undefined when the chain's gas price is not known. */
  readonly gasPrice: bigint | undefined;
  /** gasLimit × gasPrice, in the chain's native wei. */
  readonly costWei: bigint | undefined;
}

export interface RebalanceMove {
  readonly from: { readonly chainId: number; readonly assetId: string; readonly amount: bigint };
  readonly to: { readonly chainId: number; readonly assetId: string; readonly amount: bigint };
  /** The router's two transactions around the operator's bridging. */
  readonly gas: readonly [GasStep, GasStep];
}

export interface RebalancePlan {
  /** Chains out of state `ok`: the plan is worth carrying out now. */
  readonly needed: boolean;
  readonly moves: readonly RebalanceMove[];
}

/**
 * Moves from the chains above target to those below, largest first, each bounded by what the source can remove
 * (unlocked − promised) and what the destination lacks. Carried out as: remove-liquidity on the source, bridging
 * (the operator's step: the router does not bridge), add-liquidity-for on the destination.
 */
export function planRebalance(
  chains: readonly ChainInventory[],
  gasPrices: ReadonlyMap<number, bigint>,
): RebalancePlan {
  const poolCommon = chains.reduce((sum, c) => sum + c.totalCommon, 0n);
  const surplus: Array<{ chain: ChainInventory; common: bigint }> = [];
  const deficit: Array<{ chain: ChainInventory; common: bigint }> = [];
  for (const chain of chains) {
    const targetCommon = (poolCommon * basisPoints(chain.targetPercent)) / BP_WHOLE;
    if (chain.totalCommon > targetCommon) {
      const available = toCommon(
        chain.unlocked > chain.promised ? chain.unlocked - chain.promised : 0n,
        chain.decimals,
      );
      const above = chain.totalCommon - targetCommon;
      surplus.push({ chain, common: above < available ? above : available });
    } else if (chain.totalCommon < targetCommon) {
      deficit.push({ chain, common: targetCommon - chain.totalCommon });
    }
  }
  const bySize = (a: { common: bigint }, b: { common: bigint }): number =>
    a.common === b.common ? 0 : a.common > b.common ? -1 : 1;
  surplus.sort(bySize);
  deficit.sort(bySize);
  const moves: RebalanceMove[] = [];
  let i = 0;
  let j = 0;
  while (i < surplus.length && j < deficit.length) {
    const source = surplus[i];
    const sink = deficit[j];
    const common = source.common < sink.common ? source.common : sink.common;
    const fromAmount = fromCommon(common, source.chain.decimals);
    const toAmount = fromCommon(toCommon(fromAmount, source.chain.decimals), sink.chain.decimals);
    if (fromAmount > 0n && toAmount > 0n) {
      moves.push({
        from: { chainId: source.chain.chainId, assetId: source.chain.assetId, amount: fromAmount },
        to: { chainId: sink.chain.chainId, assetId: sink.chain.assetId, amount: toAmount },
        gas: [
          gasStep(source.chain.chainId, "removeLiquidity", REMOVE_LIQUIDITY_GAS_LIMIT, gasPrices),
          gasStep(sink.chain.chainId, "addLiquidityFor", ADD_LIQUIDITY_GAS_LIMIT, gasPrices),
        ],
      });
    }
    source.common -= common;
    sink.common -= common;
    if (source.common === 0n) i += 1;
    if (sink.common === 0n) j += 1;
  }
  return { needed: chains.some((c) => c.state !== "ok"), moves };
}

function gasStep(
  chainId: number,
  method: GasStep["method"],
  gasLimit: bigint,
  gasPrices: ReadonlyMap<number, bigint>,
): GasStep {
  const gasPrice = gasPrices.get(chainId);
  return { chainId, method, gasLimit, gasPrice, costWei: gasPrice === undefined ? undefined : gasLimit * gasPrice };
}

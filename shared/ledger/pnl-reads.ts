import { bucketCount, type PnlRange } from "../protocol/pnl-range";
import type { LedgerPool } from "./database";

/**
 * Profit and loss over a period, summed by PostgreSQL from the booked rows (docs/accounting.md "Profit and
 * loss"). Every sum is NUMERIC, and `net` too: a figure becomes a float only when the JSON is parsed. It is one
 * statement, hence one snapshot: the totals, the routes, the chains and the series are of the same books even
 * while the ledger keeps booking.
 */

export interface PnlUsd {
  readonly volume: number;
  readonly feeEarned: number;
  readonly gasCost: number;
  readonly relayerFeeEarned: number;
  readonly net: number;
}

export interface PnlSwaps {
  readonly claimed: number;
  readonly cancelled: number;
}

export interface PnlRoute {
  readonly sendingChainId: number;
  readonly sendingAssetId: string;
  readonly receivingChainId: number;
  readonly receivingAssetId: string;
  readonly swaps: PnlSwaps;
  readonly usd: PnlUsd;
}

export interface PnlChain {
  readonly chainId: number;
  readonly gasSpentWei: string;
  readonly transactions: number;
  readonly usd: { readonly gasCost: number; readonly feeEarned: number; readonly relayerFeeEarned: number };
}

export interface PnlOperation {
  readonly kind: string;
  readonly chainId: number;
  readonly transactions: number;
  readonly gasSpentWei: string;
  readonly usd: { readonly gasCost: number };
}

/**
 * One asset on one chain in its own base units, exact (decimal strings from NUMERIC, never a float): what
 * `npm run status` shows. The fee is in the receiving asset (its definition: docs/accounting.md), so it sits on
 * the receiving chain's asset, not on the sending chain as the USD per-chain figure does; a relayer fee on the
 * relay's chain and asset; gas on the chain's native asset (address 0). net = fee + relayer fee − gas.
 */
export interface PnlAsset {
  readonly chainId: number;
  readonly assetId: string;
  readonly feeEarned: string;
  readonly relayerFeeEarned: string;
  readonly gasSpentWei: string;
  readonly net: string;
  /** Claimed swaps whose fee is not known yet (the receiving side not booked): left out of feeEarned. */
  readonly feeUnknown: number;
}

export interface PnlBucket {
  readonly start: number;
  readonly usd: Omit<PnlUsd, "volume">;
}

export interface PnlReport {
  readonly from: number;
  readonly to: number;
  readonly swaps: PnlSwaps;
  readonly usd: PnlUsd;
  readonly routes: PnlRoute[];
  readonly chains: PnlChain[];
  readonly operations: PnlOperation[];
  readonly assets: PnlAsset[];
  /** Figures left out of the USD sums because a price (or the swap's receiving side) is not booked yet. */
  readonly unpriced: number;
  readonly series?: PnlBucket[];
}

/**
 * The rows of the period, as CTEs every query below starts from. $1 from, $2 to (unix seconds, [from, to)),
 * $3 the router's signer (lowercase): a relayer fee is the router's when its signer called the user's fulfill.
 *
 * - `swap_rows`: per swap with an event in the period, its route and the figures of its claim, its cancel and
 *   the receiving side it locked (the receiving fulfill's row, else the receiving prepare's: GET /ledger's rule);
 * - `counted`: the swaps claimed (sending-side fulfill) or, never claimed, cancelled (first cancel) in the
 *   period, at that time, with the claim's USD (`volume_usd`) and the fee: the claimed amount normalised to the
 *   receiving decimals (truncating) minus the receiving amount, in USD truncated at 18 decimals; 0 when
 *   cancelled; NULL when a price or the receiving side is missing;
 * - `relays`: the user's receiving fulfills the router's signer sent for a fee, in the period;
 * - `gas`: every transaction the router's signer paid for, in the period (swaps, relays, operations, upkeep);
 * - `routes_of`: the route of each swap a gas row or a relay belongs to.
 */
const PERIOD_ROWS = `
WITH
swap_rows AS (
  SELECT e.transaction_id,
         min(e.sending_chain_id) AS sending_chain_id, min(e.sending_asset_id) AS sending_asset_id,
         min(e.receiving_chain_id) AS receiving_chain_id, min(e.receiving_asset_id) AS receiving_asset_id,
         min(e.block_time) FILTER (WHERE e.side = 'sending' AND e.event = 'fulfilled') AS claimed_at,
         min(e.block_time) FILTER (WHERE e.event = 'cancelled') AS cancelled_at,
         (array_agg(e.amount) FILTER (WHERE e.side = 'sending' AND e.event = 'fulfilled'))[1] AS claimed_amount,
         (array_agg(e.asset_decimals) FILTER (WHERE e.side = 'sending' AND e.event = 'fulfilled'))[1] AS claimed_decimals,
         (array_agg(e.amount_usd) FILTER (WHERE e.side = 'sending' AND e.event = 'fulfilled'))[1] AS volume_usd,
         bool_or(e.side = 'receiving' AND e.event = 'fulfilled') AS receiver_fulfilled,
         (array_agg(e.amount) FILTER (WHERE e.side = 'receiving' AND e.event = 'fulfilled'))[1] AS rf_amount,
         (array_agg(e.asset_decimals) FILTER (WHERE e.side = 'receiving' AND e.event = 'fulfilled'))[1] AS rf_decimals,
         (array_agg(e.asset_price_usd) FILTER (WHERE e.side = 'receiving' AND e.event = 'fulfilled'))[1] AS rf_price,
         (array_agg(e.amount) FILTER (WHERE e.side = 'receiving' AND e.event = 'prepared'))[1] AS rp_amount,
         (array_agg(e.asset_decimals) FILTER (WHERE e.side = 'receiving' AND e.event = 'prepared'))[1] AS rp_decimals,
         (array_agg(e.asset_price_usd) FILTER (WHERE e.side = 'receiving' AND e.event = 'prepared'))[1] AS rp_price
    FROM ledger_events e
   WHERE e.side IS NOT NULL
     AND e.transaction_id IN (
           SELECT transaction_id FROM ledger_events
            WHERE side IS NOT NULL AND event IN ('fulfilled', 'cancelled')
              AND block_time >= to_timestamp($1) AND block_time < to_timestamp($2))
   GROUP BY e.transaction_id
),
locked AS (
  SELECT s.*,
         CASE WHEN s.receiver_fulfilled THEN s.rf_amount ELSE s.rp_amount END AS locked_amount,
         CASE WHEN s.receiver_fulfilled THEN s.rf_decimals ELSE s.rp_decimals END AS locked_decimals,
         CASE WHEN s.receiver_fulfilled THEN s.rf_price ELSE s.rp_price END AS locked_price
    FROM swap_rows s
),
fees AS (
  SELECT l.*,
         CASE WHEN l.claimed_at IS NOT NULL THEN 'claimed' ELSE 'cancelled' END AS outcome,
         COALESCE(l.claimed_at, l.cancelled_at) AS at,
         CASE WHEN l.claimed_at IS NULL THEN 0
              ELSE div(l.claimed_amount * power(10::numeric, l.locked_decimals), power(10::numeric, l.claimed_decimals))
                   - l.locked_amount
         END AS fee_units
    FROM locked l
),
counted AS (
  SELECT f.*,
         CASE WHEN f.fee_units = 0 THEN 0
              WHEN f.fee_units IS NULL OR f.locked_price IS NULL THEN NULL
              ELSE div(f.fee_units * f.locked_price * 1e18, power(10::numeric, f.locked_decimals)) / 1e18
         END AS fee_usd
    FROM fees f
   WHERE f.at >= to_timestamp($1) AND f.at < to_timestamp($2)
),
relays AS (
  SELECT e.chain_id, lower(e.asset_id) AS asset_id, e.transaction_id, e.block_time AS at, e.relayer_fee,
         e.relayer_fee_usd
    FROM ledger_events e
   WHERE e.side = 'receiving' AND e.event = 'fulfilled' AND lower(e.caller) = $3 AND e.relayer_fee > 0
     AND e.block_time >= to_timestamp($1) AND e.block_time < to_timestamp($2)
),
gas AS (
  SELECT t.chain_id, COALESCE(t.kind, 'unknown') AS kind, t.transaction_id, t.cost_wei, t.cost_usd, t.block_time AS at
    FROM ledger_transactions t
   WHERE t.block_time >= to_timestamp($1) AND t.block_time < to_timestamp($2)
),
routes_of AS (
  SELECT DISTINCT ON (e.transaction_id) e.transaction_id,
         e.sending_chain_id, e.sending_asset_id, e.receiving_chain_id, e.receiving_asset_id
    FROM ledger_events e
   WHERE e.side IS NOT NULL
     AND e.transaction_id IN (SELECT transaction_id FROM gas UNION SELECT transaction_id FROM relays)
   ORDER BY e.transaction_id, e.block_time
)`;

const TOTALS = `WITH
s AS (SELECT count(*) FILTER (WHERE outcome = 'claimed') AS claimed,
             count(*) FILTER (WHERE outcome = 'cancelled') AS cancelled,
             COALESCE(sum(volume_usd), 0) AS volume, COALESCE(sum(fee_usd), 0) AS fee,
             count(*) FILTER (WHERE outcome = 'claimed' AND volume_usd IS NULL)
               + count(*) FILTER (WHERE fee_usd IS NULL) AS unpriced
        FROM counted),
g AS (SELECT COALESCE(sum(cost_usd), 0) AS gas, count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced FROM gas),
r AS (SELECT COALESCE(sum(relayer_fee_usd), 0) AS relay, count(*) FILTER (WHERE relayer_fee_usd IS NULL) AS unpriced FROM relays)
SELECT s.claimed, s.cancelled, s.volume, s.fee, g.gas, r.relay, s.fee + r.relay - g.gas AS net,
       s.unpriced + g.unpriced + r.unpriced AS unpriced
  FROM s, g, r`;

const ROUTE = "sending_chain_id, sending_asset_id, receiving_chain_id, receiving_asset_id";
const ROUTE_ORDER = "x.sending_chain_id, x.sending_asset_id, x.receiving_chain_id, x.receiving_asset_id";
const ROUTES = `WITH
s AS (SELECT ${ROUTE},
             count(*) FILTER (WHERE outcome = 'claimed') AS claimed,
             count(*) FILTER (WHERE outcome = 'cancelled') AS cancelled,
             COALESCE(sum(volume_usd), 0) AS volume, COALESCE(sum(fee_usd), 0) AS fee
        FROM counted GROUP BY ${ROUTE}),
g AS (SELECT ${ROUTE.split(", ")
  .map((c) => `o.${c}`)
  .join(", ")}, COALESCE(sum(gas.cost_usd), 0) AS gas
        FROM gas JOIN routes_of o USING (transaction_id) GROUP BY ${ROUTE}),
r AS (SELECT ${ROUTE.split(", ")
  .map((c) => `o.${c}`)
  .join(", ")}, COALESCE(sum(relays.relayer_fee_usd), 0) AS relay
        FROM relays JOIN routes_of o USING (transaction_id) GROUP BY ${ROUTE})
SELECT ${ROUTE},
       COALESCE(s.claimed, 0) AS claimed, COALESCE(s.cancelled, 0) AS cancelled,
       COALESCE(s.volume, 0) AS volume, COALESCE(s.fee, 0) AS fee, COALESCE(g.gas, 0) AS gas,
       COALESCE(r.relay, 0) AS relay,
       COALESCE(s.fee, 0) + COALESCE(r.relay, 0) - COALESCE(g.gas, 0) AS net
  FROM s FULL JOIN g USING (${ROUTE}) FULL JOIN r USING (${ROUTE})
 ORDER BY ${ROUTE}`;

/** Fee earned goes to the sending chain (where the claim pays the router), a relayer fee to the relay's chain. */
const CHAINS = `WITH
g AS (SELECT chain_id, sum(cost_wei) AS wei, count(*) AS transactions, COALESCE(sum(cost_usd), 0) AS gas
        FROM gas GROUP BY chain_id),
f AS (SELECT sending_chain_id AS chain_id, COALESCE(sum(fee_usd), 0) AS fee FROM counted GROUP BY sending_chain_id),
r AS (SELECT chain_id, COALESCE(sum(relayer_fee_usd), 0) AS relay FROM relays GROUP BY chain_id)
SELECT chain_id, COALESCE(g.wei, 0)::text AS wei, COALESCE(g.transactions, 0) AS transactions,
       COALESCE(g.gas, 0) AS gas, COALESCE(f.fee, 0) AS fee, COALESCE(r.relay, 0) AS relay
  FROM g FULL JOIN f USING (chain_id) FULL JOIN r USING (chain_id)
 ORDER BY chain_id`;

const OPERATIONS = `SELECT kind, chain_id, count(*) AS transactions, sum(cost_wei)::text AS wei, COALESCE(sum(cost_usd), 0) AS gas
  FROM gas GROUP BY kind, chain_id ORDER BY chain_id, kind`;

/** Base units per (chain, asset), as text: gas is paid in the native asset, the zero address as the books name it. */
const NATIVE = "'0x0000000000000000000000000000000000000000'";
const ASSETS = `WITH
f AS (SELECT receiving_chain_id AS chain_id, lower(receiving_asset_id) AS asset_id,
             COALESCE(sum(fee_units), 0) AS fee,
             count(*) FILTER (WHERE outcome = 'claimed' AND fee_units IS NULL) AS unknown
        FROM counted GROUP BY 1, 2),
r AS (SELECT chain_id, asset_id, sum(relayer_fee) AS relay FROM relays GROUP BY 1, 2),
g AS (SELECT chain_id, ${NATIVE} AS asset_id, sum(cost_wei) AS wei FROM gas GROUP BY 1)
SELECT chain_id, asset_id, COALESCE(f.fee, 0)::text AS fee, COALESCE(r.relay, 0)::text AS relay,
       COALESCE(g.wei, 0)::text AS wei, (COALESCE(f.fee, 0) + COALESCE(r.relay, 0) - COALESCE(g.wei, 0))::text AS net,
       COALESCE(f.unknown, 0) AS unknown
  FROM f FULL JOIN r USING (chain_id, asset_id) FULL JOIN g USING (chain_id, asset_id)`;

/** $4 the step, $5 the number of buckets: each row's bucket is floor((t - from) / step), every bucket listed, empty ones at 0. */
const SERIES = `WITH
b AS (SELECT generate_series(0, $5::int - 1) AS bucket),
f AS (SELECT floor((extract(epoch FROM at) - $1) / $4)::int AS bucket, COALESCE(sum(fee_usd), 0) AS fee
        FROM counted GROUP BY 1),
g AS (SELECT floor((extract(epoch FROM at) - $1) / $4)::int AS bucket, COALESCE(sum(cost_usd), 0) AS gas
        FROM gas GROUP BY 1),
r AS (SELECT floor((extract(epoch FROM at) - $1) / $4)::int AS bucket, COALESCE(sum(relayer_fee_usd), 0) AS relay
        FROM relays GROUP BY 1)
SELECT b.bucket, COALESCE(f.fee, 0) AS fee, COALESCE(g.gas, 0) AS gas, COALESCE(r.relay, 0) AS relay,
       COALESCE(f.fee, 0) + COALESCE(r.relay, 0) - COALESCE(g.gas, 0) AS net
  FROM b LEFT JOIN f USING (bucket) LEFT JOIN g USING (bucket) LEFT JOIN r USING (bucket)
 ORDER BY b.bucket`;

/**
 * Every part in one statement, so the period's rows (PERIOD_ROWS, referenced by several parts) are read and
 * computed once: each part a JSON value, its NUMERICs written as JSON numbers by PostgreSQL, wei as text.
 */
function pnlStatement(withSeries: boolean): string {
  const part = (sql: string, order?: string): string =>
    order === undefined
      ? `(SELECT row_to_json(x) FROM (${sql}) x)`
      : `(SELECT COALESCE(json_agg(x ORDER BY ${order}), '[]'::json) FROM (${sql}) x)`;
  return `${PERIOD_ROWS}
SELECT ${part(TOTALS)} AS totals,
       ${part(ROUTES, ROUTE_ORDER)} AS routes,
       ${part(CHAINS, "x.chain_id")} AS chains,
       ${part(OPERATIONS, "x.chain_id, x.kind")} AS operations,
       ${part(ASSETS, "x.chain_id, x.asset_id")} AS assets${
         withSeries
           ? `,
       ${part(SERIES, "x.bucket")} AS series`
           : ""
       }`;
}
const PNL = pnlStatement(false);
const PNL_WITH_SERIES = pnlStatement(true);

type Row = Record<string, string | number | null>;

/** The parts' JSON: USD and counts as numbers, wei as strings (cast to text in SQL, never a float). */
const num = (value: string | number | null): number => Number(value ?? 0);
const str = (value: string | number | null): string => String(value ?? "0");

/** The period's profit and loss; `signer` is the router's signer address (relayer fees are its own). */
export async function readPnl(pool: LedgerPool, range: PnlRange, signer: string): Promise<PnlReport> {
  const params = [range.from, range.to, signer.toLowerCase()];
  const step = range.step;
  const { rows } = await pool.query<{
    totals: Row;
    routes: Row[];
    chains: Row[];
    operations: Row[];
    assets: Row[];
    series?: Row[];
  }>(
    step === undefined ? PNL : PNL_WITH_SERIES,
    step === undefined ? params : [...params, step, bucketCount({ ...range, step })],
  );
  const { totals, routes, chains, operations, assets, series } = rows[0];
  return {
    from: range.from,
    to: range.to,
    swaps: { claimed: num(totals.claimed), cancelled: num(totals.cancelled) },
    usd: usdOf(totals),
    routes: routes.map((r) => ({
      sendingChainId: num(r.sending_chain_id),
      sendingAssetId: str(r.sending_asset_id),
      receivingChainId: num(r.receiving_chain_id),
      receivingAssetId: str(r.receiving_asset_id),
      swaps: { claimed: num(r.claimed), cancelled: num(r.cancelled) },
      usd: usdOf(r),
    })),
    chains: chains.map((c) => ({
      chainId: num(c.chain_id),
      gasSpentWei: str(c.wei),
      transactions: num(c.transactions),
      usd: { gasCost: num(c.gas), feeEarned: num(c.fee), relayerFeeEarned: num(c.relay) },
    })),
    operations: operations.map((o) => ({
      kind: str(o.kind),
      chainId: num(o.chain_id),
      transactions: num(o.transactions),
      gasSpentWei: str(o.wei),
      usd: { gasCost: num(o.gas) },
    })),
    assets: assets.map((a) => ({
      chainId: num(a.chain_id),
      assetId: str(a.asset_id),
      feeEarned: str(a.fee),
      relayerFeeEarned: str(a.relay),
      gasSpentWei: str(a.wei),
      net: str(a.net),
      feeUnknown: num(a.unknown),
    })),
    unpriced: num(totals.unpriced),
    ...(series === undefined || step === undefined
      ? {}
      : {
          series: series.map((b) => ({
            start: range.from + num(b.bucket) * step,
            usd: { feeEarned: num(b.fee), gasCost: num(b.gas), relayerFeeEarned: num(b.relay), net: num(b.net) },
          })),
        }),
  };
}

function usdOf(row: Row): PnlUsd {
  return {
    volume: num(row.volume),
    feeEarned: num(row.fee),
    gasCost: num(row.gas),
    relayerFeeEarned: num(row.relay),
    net: num(row.net),
  };
}

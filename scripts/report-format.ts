import type { PnlReport } from "../shared/ledger/pnl-reads";
import { table } from "./status-format";

/**
 * `npm run report` without I/O: the period from `--since` / `--until`, and GET /pnl's body as tables for a
 * person or as CSV for a spreadsheet. Unit-tested on captured bodies; the command (report.ts) only fetches.
 */

const UNIT_SEC: Readonly<Record<string, number>> = { m: 60, h: 3_600, d: 86_400, w: 604_800 };

/**
 * A time argument as unix seconds: a duration before now (`30m`, `24h`, `7d`, `2w`), unix seconds, or an ISO
 * date (`2025-11-01`, `2025-11-01T12:00:00Z`). Throws naming the option on anything else.
 */
export function parseReportTime(value: string, option: string, nowSec: number): number {
  const duration = /^(\d+)([mhdw])$/.exec(value);
  if (duration) return Math.floor(nowSec) - Number(duration[1]) * UNIT_SEC[duration[2]];
  if (/^\d{1,12}$/.test(value)) return Number(value);
  if (/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)) {
    const ms = Date.parse(value);
    if (Number.isFinite(ms)) return Math.floor(ms / 1000);
  }
  throw new Error(
    `${option}: expected a duration (30m, 24h, 7d, 2w), unix seconds or an ISO date, got ${JSON.stringify(value)}`,
  );
}

/** Four decimals: L2 gas and small fees are fractions of a cent; the CSV carries the full figures. */
const usd = (n: number): string => n.toFixed(4);
const when = (sec: number): string => new Date(sec * 1000).toISOString().replace(".000Z", "Z");
const short = (address: string): string =>
  address.length > 12 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address;

/** The period's figures as tables: totals, per route, per chain, per operation, and the unpriced count. */
export function formatPnlTable(report: PnlReport): string {
  const lines = [`Profit and loss ${when(report.from)} → ${when(report.to)} (USD)`, ""];
  lines.push(
    ...table(
      ["claimed", "cancelled", "volume", "fee earned", "relayer fees", "gas cost", "net"],
      [
        [
          String(report.swaps.claimed),
          String(report.swaps.cancelled),
          usd(report.usd.volume),
          usd(report.usd.feeEarned),
          usd(report.usd.relayerFeeEarned),
          usd(report.usd.gasCost),
          usd(report.usd.net),
        ],
      ],
    ),
  );
  lines.push("", "Per route");
  lines.push(
    ...table(
      ["route", "claimed", "cancelled", "volume", "fee earned", "relayer fees", "gas cost", "net"],
      report.routes.map((r) => [
        `${r.sendingChainId}:${short(r.sendingAssetId)} → ${r.receivingChainId}:${short(r.receivingAssetId)}`,
        String(r.swaps.claimed),
        String(r.swaps.cancelled),
        usd(r.usd.volume),
        usd(r.usd.feeEarned),
        usd(r.usd.relayerFeeEarned),
        usd(r.usd.gasCost),
        usd(r.usd.net),
      ]),
    ),
  );
  lines.push("", "Per chain");
  lines.push(
    ...table(
      ["chain", "transactions", "gas (wei)", "gas cost", "fee earned", "relayer fees"],
      report.chains.map((c) => [
        String(c.chainId),
        String(c.transactions),
        c.gasSpentWei,
        usd(c.usd.gasCost),
        usd(c.usd.feeEarned),
        usd(c.usd.relayerFeeEarned),
      ]),
    ),
  );
  lines.push("", "Per operation");
  lines.push(
    ...table(
      ["kind", "chain", "transactions", "gas (wei)", "gas cost"],
      report.operations.map((o) => [
        o.kind,
        String(o.chainId),
        String(o.transactions),
        o.gasSpentWei,
        usd(o.usd.gasCost),
      ]),
    ),
  );
  lines.push(
    "",
    report.unpriced === 0
      ? "Unpriced: 0 (every figure is priced)"
      : `! Unpriced: ${report.unpriced} figure(s) without a USD price yet: the USD sums above leave them out (partial)`,
  );
  return `${lines.join("\n")}\n`;
}

const CSV_HEADER = [
  "scope",
  "from",
  "to",
  "chain_id",
  "sending_chain_id",
  "sending_asset_id",
  "receiving_chain_id",
  "receiving_asset_id",
  "claimed",
  "cancelled",
  "transactions",
  "gas_spent_wei",
  "volume_usd",
  "fee_earned_usd",
  "relayer_fee_earned_usd",
  "gas_cost_usd",
  "net_usd",
  "unpriced",
];

/** One row for the totals, one per route and one per chain, under a header line; numbers as the API gave them. */
export function formatPnlCsv(report: PnlReport): string {
  const row = (cells: Partial<Record<(typeof CSV_HEADER)[number], string | number>>): string =>
    CSV_HEADER.map((column) => (column === "from" ? report.from : column === "to" ? report.to : (cells[column] ?? "")))
      .map(String)
      .join(",");
  const rows = [
    CSV_HEADER.join(","),
    row({
      scope: "total",
      claimed: report.swaps.claimed,
      cancelled: report.swaps.cancelled,
      volume_usd: report.usd.volume,
      fee_earned_usd: report.usd.feeEarned,
      relayer_fee_earned_usd: report.usd.relayerFeeEarned,
      gas_cost_usd: report.usd.gasCost,
      net_usd: report.usd.net,
      unpriced: report.unpriced,
    }),
    ...report.routes.map((r) =>
      row({
        scope: "route",
        sending_chain_id: r.sendingChainId,
        sending_asset_id: r.sendingAssetId,
        receiving_chain_id: r.receivingChainId,
        receiving_asset_id: r.receivingAssetId,
        claimed: r.swaps.claimed,
        cancelled: r.swaps.cancelled,
        volume_usd: r.usd.volume,
        fee_earned_usd: r.usd.feeEarned,
        relayer_fee_earned_usd: r.usd.relayerFeeEarned,
        gas_cost_usd: r.usd.gasCost,
        net_usd: r.usd.net,
      }),
    ),
    ...report.chains.map((c) =>
      row({
        scope: "chain",
        chain_id: c.chainId,
        transactions: c.transactions,
        gas_spent_wei: c.gasSpentWei,
        fee_earned_usd: c.usd.feeEarned,
        relayer_fee_earned_usd: c.usd.relayerFeeEarned,
        gas_cost_usd: c.usd.gasCost,
      }),
    ),
  ];
  return `${rows.join("\n")}\n`;
}

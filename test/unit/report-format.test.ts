import type { PnlReport } from "../../shared/ledger/pnl-reads";
import { formatPnlCsv, formatPnlTable, parseReportTime } from "../../scripts/report-format";

const NOW = 1_764_000_000;
const A = "0x1111111111111111111111111111111111111111";
const B = "0x2222222222222222222222222222222222222222";
const usd5 = { volume: 10, feeEarned: 0.005, gasCost: 1.25, relayerFeeEarned: 0.5, net: -0.745 };
const REPORT: PnlReport = {
  from: NOW - 7 * 86_400,
  to: NOW,
  swaps: { claimed: 1, cancelled: 1 },
  usd: { ...usd5, gasCost: 1.63, net: -1.125 },
  routes: [
    {
      sendingChainId: 1337,
      sendingAssetId: A,
      receivingChainId: 1338,
      receivingAssetId: B,
      swaps: { claimed: 1, cancelled: 1 },
      usd: usd5,
    },
  ],
  chains: [
    {
      chainId: 1337,
      gasSpentWei: "412883002890181",
      transactions: 3,
      usd: { gasCost: 0.83, feeEarned: 0.005, relayerFeeEarned: 0 },
    },
    {
      chainId: 1338,
      gasSpentWei: "400000000000000",
      transactions: 3,
      usd: { gasCost: 0.8, feeEarned: 0, relayerFeeEarned: 0.5 },
    },
  ],
  operations: [{ kind: "approve", chainId: 1338, transactions: 1, gasSpentWei: "46000000000000", usd: { gasCost: 0 } }],
  assets: [],
  unpriced: 1,
};

describe("npm run report: times", () => {
  it("takes durations before now, unix seconds and ISO dates; refuses anything else naming the option", () => {
    expect(parseReportTime("7d", "--since", NOW)).toBe(NOW - 7 * 86_400);
    expect(parseReportTime("24h", "--since", NOW + 0.7)).toBe(NOW - 86_400);
    expect(parseReportTime("30m", "--since", NOW)).toBe(NOW - 1_800);
    expect(parseReportTime("2w", "--since", NOW)).toBe(NOW - 14 * 86_400);
    expect(parseReportTime("1700000000", "--until", NOW)).toBe(1_700_000_000);
    expect(parseReportTime("2025-11-01", "--since", NOW)).toBe(Date.UTC(2025, 10, 1) / 1000);
    expect(parseReportTime("2025-11-01T12:00:00Z", "--since", NOW)).toBe(Date.UTC(2025, 10, 1, 12) / 1000);
    for (const bad of ["7days", "-1d", "yesterday", "2025-13-45"]) {
      expect(() => parseReportTime(bad, "--until", NOW)).toThrow(/^--until: expected a duration/);
    }
  });
});

describe("npm run report: output", () => {
  it("tables: totals, the route, both chains, the operation and a warning that the sums are partial", () => {
    const text = formatPnlTable(REPORT);
    expect(text).toContain("Profit and loss 2025-11-17T16:00:00Z → 2025-11-24T16:00:00Z (USD)");
    const lines = text.split("\n");
    const totals = lines[lines.indexOf("") + 2];
    expect(totals.trim().split(/\s+/)).toEqual(["1", "1", "10.0000", "0.0050", "0.5000", "1.6300", "-1.1250"]);
    expect(text).toMatch(
      /1337:0x1111…1111 → 1338:0x2222…2222\s+1\s+1\s+10\.0000\s+0\.0050\s+0\.5000\s+1\.2500\s+-0\.7450/,
    );
    expect(text).toMatch(/\n\s*1337\s+3\s+412883002890181\s+0\.8300\s+0\.0050\s+0\.0000\n/);
    expect(text).toMatch(/\napprove\s+1338\s+1\s+46000000000000\s+0\.0000\n/);
    expect(text).toContain("! Unpriced: 1 figure(s) without a USD price yet");
    expect(formatPnlTable({ ...REPORT, unpriced: 0 })).toContain("Unpriced: 0 (every figure is priced)");
  });

  it("CSV: a header, the totals, one row per route and per chain, numbers as the API gave them", () => {
    const rows = formatPnlCsv(REPORT)
      .trimEnd()
      .split("\n")
      .map((l) => l.split(","));
    const header = rows[0];
    expect(rows).toHaveLength(1 + 1 + 1 + 2);
    const byColumn = rows.slice(1).map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
    expect(byColumn.map((r) => r.scope)).toEqual(["total", "route", "chain", "chain"]);
    expect(byColumn[0]).toMatchObject({ from: String(REPORT.from), to: String(NOW), net_usd: "-1.125", unpriced: "1" });
    expect(byColumn[1]).toMatchObject({ sending_asset_id: A, receiving_chain_id: "1338", fee_earned_usd: "0.005" });
    expect(byColumn[2]).toMatchObject({ chain_id: "1337", gas_spent_wei: "412883002890181", transactions: "3" });
    expect(rows.filter((r) => r.length !== header.length)).toEqual([]);
  });
});

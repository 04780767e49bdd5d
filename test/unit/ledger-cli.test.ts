import { LedgerCliError, parseRebuildArgs } from "../../scripts/ledger";
import { compareTotals, type LedgerTotal } from "../../shared/protocol/ledger-totals";

const total = (kind: string, rows: number, sum: string): LedgerTotal => ({
  chainId: 1,
  assetId: "0xa",
  kind,
  rows,
  sum,
});

describe("npm run ledger -- rebuild: arguments and the comparison", () => {
  it("reads the range, the chains and the scratch database; refuses anything else with the usage", () => {
    expect(parseRebuildArgs(["rebuild", "--from-block", "10"])).toEqual({ fromBlock: 10 });
    expect(
      parseRebuildArgs([
        "rebuild",
        "--from-block",
        "0",
        "--to-block",
        "99",
        "--chain",
        "1,137",
        "--database",
        "postgres://h/db",
      ]),
    ).toEqual({ fromBlock: 0, toBlock: 99, chainIds: [1, 137], database: "postgres://h/db" });
    for (const [args, message] of [
      [["rebuild"], "--from-block is required"],
      [["rebuild", "--from-block", "-1"], "--from-block: must be a block number"],
      [["rebuild", "--from-block", "1", "--chain", "x"], "--chain: must be chain ids"],
      [["rebuild", "--from-block", "1", "--database", "mysql://x"], "--database: must be a postgres://"],
      [["rebuild", "--from-block", "1", "--force", "yes"], "--force: unknown flag"],
      [["rebuild", "--from-block"], "--from-block: needs a value"],
      [["rewrite"], "usage: npm run ledger -- rebuild"],
    ] as const) {
      expect(() => parseRebuildArgs(args)).toThrow(LedgerCliError);
      expect(() => parseRebuildArgs(args)).toThrow(message);
    }
  });

  it("agrees only line for line: same rows and same sum on both sides", () => {
    const live = [total("gas", 2, "100"), total("liquidityAdded", 1, "5")];
    expect(compareTotals(live, [...live]).filter((c) => !c.same)).toEqual([]);
    const differs = compareTotals(live, [total("gas", 2, "101"), total("liquidityAdded", 1, "5"), total("x", 1, "0")]);
    expect(differs.map((c) => [c.key, c.same])).toEqual([
      ["1 0xa gas", false],
      ["1 0xa liquidityAdded", true],
      ["1 0xa x", false],
    ]);
  });
});

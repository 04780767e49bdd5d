import {
  PNL_MAX_BUCKETS,
  bucketCount,
  bucketIndexOf,
  bucketStarts,
  encodeLedgerCursor,
  parseLedgerPage,
  parsePnlRange,
} from "../../shared/protocol/pnl-range";

const NOW = 1_764_000_123.9;
const ID = `0x${"ab".repeat(32)}`;

describe("parsePnlRange", () => {
  it("defaults from to 0 and to to now (whole seconds)", () => {
    expect(parsePnlRange({}, NOW)).toEqual({ from: 0, to: 1_764_000_123 });
    expect(parsePnlRange({ from: "100", to: "200" }, NOW)).toEqual({ from: 100, to: 200 });
    expect(parsePnlRange({ from: "200", to: "200" }, NOW)).toEqual({ from: 200, to: 200 });
  });

  it.each([
    [{ from: "10", to: "5" }, "from", /from must not be after to/],
    [{ from: "1.5" }, "from", /unix seconds/],
    [{ from: "-1" }, "from", /unix seconds/],
    [{ to: "1e9" }, "to", /unix seconds/],
    [{ to: "" }, "to", /unix seconds/],
    [{ from: ["1", "2"] }, "from", /unix seconds/],
    [{ to: "999999999999" }, "to", /at most/],
    [{ from: "0", to: "7200", step: "3599" }, "step", /at least 3600/],
    [{ from: "0", to: "7200", step: "1h" }, "step", /unix seconds/],
  ])("refuses %j naming %s", (query, field, message) => {
    let caught: unknown;
    try {
      parsePnlRange(query, NOW);
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ code: "PROTOCOL_INPUT_INVALID", context: { field } });
    expect(String((caught as Error).message)).toMatch(message);
  });

  it("takes up to 1000 buckets and refuses 1001", () => {
    expect(parsePnlRange({ from: "0", to: String(3600 * PNL_MAX_BUCKETS), step: "3600" }, NOW)).toEqual({
      from: 0,
      to: 3_600_000,
      step: 3600,
    });
    expect(() => parsePnlRange({ from: "0", to: String(3600 * PNL_MAX_BUCKETS + 1), step: "3600" }, NOW)).toThrow(
      /1001 buckets/,
    );
    // The default range from 0 at an hourly step is far beyond: the operator is told to narrow it.
    expect(() => parsePnlRange({ step: "3600" }, NOW)).toThrow(/widen step or narrow from\/to/);
  });
});

describe("buckets", () => {
  const range = { from: 1000, to: 1000 + 2 * 3600 + 1, step: 3600 };
  it("cover [from, to): the last one may be shorter, an empty range has none", () => {
    expect(bucketCount(range)).toBe(3);
    expect(bucketStarts(range)).toEqual([1000, 4600, 8200]);
    expect(bucketCount({ from: 5, to: 5, step: 3600 })).toBe(0);
    expect(bucketStarts({ from: 0, to: 86_400 * 30, step: 86_400 })).toHaveLength(30);
  });
  it("place a time by floor((t - from) / step); to itself is outside", () => {
    expect(bucketIndexOf(range, 1000)).toBe(0);
    expect(bucketIndexOf(range, 4599)).toBe(0);
    expect(bucketIndexOf(range, 4600)).toBe(1);
    expect(bucketIndexOf(range, 8200)).toBe(2);
    expect(bucketIndexOf(range, range.to)).toBeUndefined();
    expect(bucketIndexOf(range, 999)).toBeUndefined();
  });
});

describe("parseLedgerPage", () => {
  it("limit 1..100, default 20; before a block time or a cursor round-tripped from encodeLedgerCursor", () => {
    expect(parseLedgerPage({})).toEqual({ limit: 20 });
    expect(parseLedgerPage({ limit: "100" })).toEqual({ limit: 100 });
    expect(parseLedgerPage({ before: "1764000000" })).toEqual({ limit: 20, before: { time: 1_764_000_000 } });
    const cursor = encodeLedgerCursor({ time: 1_764_000_000, transactionId: ID.toUpperCase().replace("0X", "0x") });
    expect(parseLedgerPage({ limit: "5", before: cursor })).toEqual({
      limit: 5,
      before: { time: 1_764_000_000, transactionId: ID },
    });
  });
  it.each([
    [{ limit: "0" }, "limit"],
    [{ limit: "101" }, "limit"],
    [{ limit: "2.5" }, "limit"],
    [{ before: "yesterday" }, "before"],
    [{ before: `1_${ID}` + "0" }, "before"],
    [{ before: ["1", "2"] }, "before"],
  ])("refuses %j naming %s", (query, field) => {
    expect(() => parseLedgerPage(query)).toThrow(expect.objectContaining({ context: { field } }));
  });
});

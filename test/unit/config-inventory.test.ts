import { ConfigError, loadConfig } from "../../shared/config";
import { validConfig } from "./config-fixtures";

/** A valid config whose one pool (1337, 1338) has the given inventory section. */
function withInventory(inventory: unknown): Record<string, unknown> {
  const raw = validConfig();
  (raw.swapPools as Array<Record<string, unknown>>)[0].inventory = inventory;
  return raw;
}

function problemsOf(raw: unknown): string[] {
  try {
    loadConfig(raw, {});
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  throw new Error("expected the config to be refused");
}

describe("swapPools[i].inventory (docs/config.md, Inventory targets)", () => {
  it("loads targets, minimums and floors, the floor defaulting to 0", () => {
    const { config } = loadConfig(
      withInventory({
        "1337": { targetPercent: 60, minimumPercent: 40, floor: "1000" },
        "1338": { targetPercent: 40, minimumPercent: 25 },
      }),
      {},
    );
    expect(config.swapPools[0].inventory).toEqual({
      "1337": { targetPercent: 60, minimumPercent: 40, floor: "1000" },
      "1338": { targetPercent: 40, minimumPercent: 25, floor: "0" },
    });
  });

  it("accepts thirds that add up to 100 within rounding", () => {
    const raw = validConfig();
    (raw.chainConfig as Record<string, unknown>)["1339"] = {
      providers: ["http://127.0.0.1:18548"],
      transactionManagerAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    };
    const pool = (raw.swapPools as Array<{ assets: unknown[]; inventory?: unknown }>)[0];
    pool.assets.push({ chainId: 1339, assetId: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" });
    pool.inventory = {
      "1337": { targetPercent: 33.333, minimumPercent: 20 },
      "1338": { targetPercent: 33.333, minimumPercent: 20 },
      "1339": { targetPercent: 33.334, minimumPercent: 20 },
    };
    expect(() => loadConfig(raw, {})).not.toThrow();
  });

  it.each([
    [
      "a share out of range",
      { "1337": { targetPercent: 120, minimumPercent: 10 }, "1338": { targetPercent: 0, minimumPercent: 0 } },
      "swapPools[0].inventory.1337.targetPercent: must be less than or equal to 100",
    ],
    [
      "a minimum above its target",
      { "1337": { targetPercent: 50, minimumPercent: 60 }, "1338": { targetPercent: 50, minimumPercent: 10 } },
      "swapPools[0].inventory.1337.minimumPercent: 60 is above the chain's targetPercent 50",
    ],
    [
      "targets not adding up to 100",
      { "1337": { targetPercent: 50, minimumPercent: 10 }, "1338": { targetPercent: 40, minimumPercent: 10 } },
      "swapPools[0].inventory: the chains' targetPercent add up to 90, not 100",
    ],
    [
      "a chain outside the pool",
      {
        "1337": { targetPercent: 50, minimumPercent: 10 },
        "1338": { targetPercent: 50, minimumPercent: 10 },
        "1": { targetPercent: 0, minimumPercent: 0 },
      },
      "swapPools[0].inventory.1: chain 1 has no asset in this pool",
    ],
    [
      "a chain of the pool without a target",
      { "1337": { targetPercent: 100, minimumPercent: 10 }, "9": { targetPercent: 0, minimumPercent: 0 } },
      "swapPools[0].inventory.1338: chain 1338 of the pool has no target (every chain of the pool needs one)",
    ],
    [
      "a floor that is not base units",
      {
        "1337": { targetPercent: 50, minimumPercent: 10, floor: "1.5" },
        "1338": { targetPercent: 50, minimumPercent: 10 },
      },
      "swapPools[0].inventory.1337.floor: must be a decimal integer string (wei, digits only)",
    ],
    [
      "a misspelt key",
      { "1337": { targetPercent: 50, minimumPercnt: 10 }, "1338": { targetPercent: 50, minimumPercent: 10 } },
      "swapPools[0].inventory.1337.minimumPercnt",
    ],
  ])("refuses %s, naming the key", (_what, inventory, expected) => {
    const problems = problemsOf(withInventory(inventory));
    expect(problems.map((p) => p.slice(0, expected.length))).toContain(expected);
  });

  it("refuses a target on a chain where the pool has two assets", () => {
    const raw = withInventory({
      "1337": { targetPercent: 50, minimumPercent: 10 },
      "1338": { targetPercent: 50, minimumPercent: 10 },
    });
    const pool = (raw.swapPools as Array<{ assets: unknown[] }>)[0];
    pool.assets.push({ chainId: 1338, assetId: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
    expect(problemsOf(raw)).toContain(
      "swapPools[0].inventory.1338: the pool has 2 assets on chain 1338; a target needs exactly one",
    );
  });
});

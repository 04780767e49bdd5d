import { poolAssetsOf, poolPartnersOf } from "../../shared/config/pools";
import { readAhead } from "../../shared/timing";

describe("poolPartnersOf (shared/config/pools.ts)", () => {
  const asset = (chainId: number): { chainId: number; assetId: string } => ({ chainId, assetId: `0x${chainId}` });
  const config = {
    swapPools: [
      { name: "TEST", assets: [asset(1337), asset(1338)] },
      { name: "ETH", assets: [asset(1338), asset(10), asset(1337)] },
      { name: "OTHER", assets: [asset(56), asset(100)] },
    ],
  };

  it("lists every chain that shares a pool with the chain, once, without the chain itself", () => {
    expect(poolPartnersOf(config, 1337)).toEqual([1338, 10]);
    expect(poolPartnersOf(config, 56)).toEqual([100]);
  });

  it("is empty for a chain in no pool (gas pricing only)", () => {
    expect(poolPartnersOf(config, 1)).toEqual([]);
  });
});

describe("poolAssetsOf (shared/config/pools.ts)", () => {
  const token = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
  const other = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
  const config = {
    swapPools: [
      {
        name: "TEST",
        assets: [
          { chainId: 1337, assetId: token },
          { chainId: 1338, assetId: other },
        ],
      },
      // The same asset in a second pool, written in another case: listed once.
      { name: "TEST2", assets: [{ chainId: 1337, assetId: token.toUpperCase().replace("0X", "0x") }] },
    ],
  };

  it("lists the chain's pool assets once each, checksummed", () => {
    expect(poolAssetsOf(config, 1337)).toEqual(["0x5FbDB2315678afecb367f032d93F642f64180aa3"]);
    expect(poolAssetsOf(config, 1338)).toEqual([other]);
    expect(poolAssetsOf(config, 1)).toEqual([]);
  });
});

describe("readAhead (shared/timing.ts)", () => {
  it("leaves no unhandled rejection when nobody awaits it, and still rejects for whoever does", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      void readAhead(Promise.reject(new Error("nobody awaited this")));
      const awaited = readAhead(Promise.reject(new Error("judged later")));
      // Unhandled rejections are reported after the microtask queue drains: wait for the next macrotask turn.
      await new Promise((resolve) => setImmediate(resolve));
      await expect(awaited).rejects.toThrow("judged later");
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("resolves to the promise's value", async () => {
    await expect(readAhead(Promise.resolve(42))).resolves.toBe(42);
  });
});

import { poolPartnersOf } from "../../shared/config/pools";
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

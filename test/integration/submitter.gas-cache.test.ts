import { cachedGasPrice } from "../../shared/chain/gas-price";
import type { Fee } from "../../shared/protocol/gas";

/** The submitter's per-chain gas price cache: one lookup per interval, shared by concurrent jobs. */
describe("cachedGasPrice", () => {
  const fee = (gwei: number): Fee => ({ type: 0, gasPrice: BigInt(gwei) * 1_000_000_000n });

  it("shares one refresh among concurrent callers and serves it until it is older than maxAgeMs", async () => {
    let nowMs = 1_000;
    let loads = 0;
    const price = cachedGasPrice(
      async () => fee(++loads),
      1_000,
      () => nowMs,
    );
    await expect(Promise.all([price(), price(), price()])).resolves.toEqual([fee(1), fee(1), fee(1)]);
    nowMs += 999;
    await expect(price()).resolves.toEqual(fee(1));
    nowMs += 1;
    await expect(price()).resolves.toEqual(fee(2));
    expect(loads).toBe(2);
  });

  it("does not cache a failed refresh: the next caller asks again", async () => {
    let calls = 0;
    const price = cachedGasPrice(async () => {
      calls += 1;
      if (calls === 1) throw new Error("rpc down");
      return fee(7);
    }, 60_000);
    await expect(price()).rejects.toThrow("rpc down");
    await expect(price()).resolves.toEqual(fee(7));
    expect(calls).toBe(2);
  });
});

import {
  ADD_LIQUIDITY_GAS_LIMIT,
  REMOVE_LIQUIDITY_GAS_LIMIT,
  assessPool,
  fromCommon,
  planRebalance,
  receivingKeep,
  toCommon,
  type ChainFigures,
  type ChainTarget,
} from "../../shared/protocol/inventory";

const USDC6 = "0x00000000000000000000000000000000000000a6";
const USDC18 = "0x00000000000000000000000000000000000000b8";
const E6 = 10n ** 6n;
const E18 = 10n ** 18n;

/** Chain 1337 holds a 6-decimal token, chain 1338 the same value in an 18-decimal one; targets 50/50, minimum 30. */
function pool(a: Partial<ChainFigures>, b: Partial<ChainFigures>, targets: Partial<ChainTarget> = {}) {
  const base = { locked: 0n, promised: 0n, owed: 0n, targetPercent: 50, minimumPercent: 30, floor: 0n, ...targets };
  return [
    { ...base, chainId: 1337, assetId: USDC6, decimals: 6, unlocked: 1000n * E6, ...a },
    { ...base, chainId: 1338, assetId: USDC18, decimals: 18, unlocked: 1000n * E18, ...b },
  ];
}

describe("assessPool: shares across decimals, states", () => {
  it("compares 6- and 18-decimal chains in whole tokens", () => {
    const [a, b] = assessPool(pool({ unlocked: 250n * E6 }, { unlocked: 750n * E18 }));
    expect(a.totalCommon).toBe(250n * E18);
    expect(a.sharePercent).toBe(25);
    expect(b.sharePercent).toBe(75);
    expect(a.state).toBe("low");
    expect(b.state).toBe("ok");
  });

  it("counts owed in, promised out, and leaves locked (already out of unlocked) aside", () => {
    const [a] = assessPool(
      pool({ unlocked: 500n * E6, owed: 200n * E6, promised: 100n * E6, locked: 300n * E6 }, { unlocked: 400n * E18 }),
    );
    expect(a.total).toBe(600n * E6);
    expect(a.sharePercent).toBe(60);
  });

  it("is critical below the floor (unlocked − promised) or with nothing unlocked, whatever the share", () => {
    const [a, b] = assessPool(
      pool(
        { unlocked: 100n * E6, promised: 60n * E6, owed: 900n * E6 },
        { unlocked: 0n, owed: 10n * E18 },
        {
          floor: 50n * E6,
        },
      ),
    );
    expect(a.sharePercent).toBeGreaterThan(90);
    expect(a.state).toBe("critical"); // 40 free < floor 50
    expect(b.state).toBe("critical"); // nothing unlocked
  });

  it("has no share when the pool holds nothing", () => {
    const [a] = assessPool(pool({ unlocked: 0n }, { unlocked: 0n }));
    expect(a.sharePercent).toBeUndefined();
    expect(a.state).toBe("critical");
  });
});

describe("receivingKeep: the least the receiving chain may hold after a bid", () => {
  it("keeps the share at the minimum once the incoming amount lands on the sending chain", () => {
    // others 700, incoming 100, minimum 30 %: y / (800 + y) = 0.3 → y = 342.857… → rounded up.
    const keep = receivingKeep({
      othersCommon: 700n * E18,
      incomingCommon: 100n * E18,
      minimumPercent: 30,
      floor: 0n,
      decimals: 6,
    });
    expect(keep).toBe(342_857_143n);
    const y = toCommon(keep, 6);
    expect((y * 10_000n) / (800n * E18 + y)).toBeGreaterThanOrEqual(3_000n);
    expect(((y - E18 / E6) * 10_000n) / (800n * E18 + y - E18 / E6)).toBeLessThan(3_000n);
  });

  it("is the floor when that is higher, and everything at a 100 % minimum", () => {
    expect(receivingKeep({ othersCommon: 0n, incomingCommon: E18, minimumPercent: 10, floor: 5n, decimals: 18 })).toBe(
      E18 / 9n + 1n,
    );
    expect(receivingKeep({ othersCommon: 0n, incomingCommon: 0n, minimumPercent: 0, floor: 5n, decimals: 18 })).toBe(
      5n,
    );
    expect(receivingKeep({ othersCommon: 0n, incomingCommon: 0n, minimumPercent: 100, floor: 0n, decimals: 18 })).toBe(
      2n ** 256n,
    );
  });
});

describe("planRebalance", () => {
  it("moves the surplus of the chain above target to the one below, in both chains' units, with gas", () => {
    const chains = assessPool(pool({ unlocked: 200n * E6 }, { unlocked: 800n * E18 }));
    const plan = planRebalance(chains, new Map([[1338, 2_000_000_000n]]));
    expect(plan.needed).toBe(true);
    expect(plan.moves).toHaveLength(1);
    const [move] = plan.moves;
    expect(move.from).toEqual({ chainId: 1338, assetId: USDC18, amount: 300n * E18 });
    expect(move.to).toEqual({ chainId: 1337, assetId: USDC6, amount: 300n * E6 });
    expect(move.gas[0]).toEqual({
      chainId: 1338,
      method: "removeLiquidity",
      gasLimit: REMOVE_LIQUIDITY_GAS_LIMIT,
      gasPrice: 2_000_000_000n,
      costWei: REMOVE_LIQUIDITY_GAS_LIMIT * 2_000_000_000n,
    });
    expect(move.gas[1]).toMatchObject({ chainId: 1337, method: "addLiquidityFor", gasLimit: ADD_LIQUIDITY_GAS_LIMIT });
    expect(move.gas[1].costWei).toBeUndefined(); // no gas price known for 1337
    // Carried out, the plan lands every chain on its target.
    const after = assessPool(pool({ unlocked: 500n * E6 }, { unlocked: 500n * E18 }));
    expect(after.map((c) => c.sharePercent)).toEqual([50, 50]);
  });

  it("never plans to remove more than the source can (unlocked − promised), nor dust that rounds to 0", () => {
    const chains = assessPool(pool({ unlocked: 100n * E6 }, { unlocked: 50n * E18, owed: 850n * E18, promised: 0n }));
    const plan = planRebalance(chains, new Map());
    expect(plan.moves[0].from.amount).toBe(50n * E18);
    const dust = assessPool(pool({ unlocked: 500n * E6 }, { unlocked: 500n * E18 + 1n }));
    expect(planRebalance(dust, new Map()).moves).toEqual([]);
  });

  it("splits across three chains, largest surplus to largest deficit", () => {
    const base = { locked: 0n, promised: 0n, owed: 0n, minimumPercent: 10, floor: 0n, decimals: 18 };
    const chains = assessPool([
      { ...base, chainId: 1, assetId: USDC18, unlocked: 700n * E18, targetPercent: 40 },
      { ...base, chainId: 2, assetId: USDC18, unlocked: 200n * E18, targetPercent: 30 },
      { ...base, chainId: 3, assetId: USDC18, unlocked: 100n * E18, targetPercent: 30 },
    ]);
    const moves = planRebalance(chains, new Map()).moves.map((m) => [m.from.chainId, m.to.chainId, m.to.amount]);
    expect(moves).toEqual([
      [1, 3, 200n * E18],
      [1, 2, 100n * E18],
    ]);
  });
});

describe("a one-sided flow of swaps (1337 → 1338, again and again)", () => {
  it("drains the receiving chain's share step by step: ok, then low, then critical; the plan grows with it", () => {
    const floor = 100n * E18;
    let a = 1000n * E6; // sending chain: gains
    let b = 1000n * E18; // receiving chain: loses
    const seen: string[] = [];
    const planned: bigint[] = [];
    for (let swap = 0; swap < 10; swap += 1) {
      a += 95n * E6;
      b -= 95n * E18;
      const chains = assessPool(
        pool({ unlocked: a }, { unlocked: b }, { floor: 0n }).map((c, i) => (i === 1 ? { ...c, floor } : c)),
      );
      seen.push(chains[1].state);
      const plan = planRebalance(chains, new Map());
      planned.push(plan.moves[0]?.to.amount ?? 0n);
      expect(chains[0].sharePercent! + chains[1].sharePercent!).toBeCloseTo(100, 3);
    }
    expect(seen).toEqual(["ok", "ok", "ok", "ok", "low", "low", "low", "low", "low", "critical"]);
    // Each swap of 95 adds 95 to what the plan moves back (half from each side of a 50/50 target).
    for (let i = 1; i < planned.length; i += 1) expect(planned[i] - planned[i - 1]).toBe(95n * E18);
    expect(fromCommon(toCommon(planned[9], 18), 6)).toBe(950n * E6);
  });
});

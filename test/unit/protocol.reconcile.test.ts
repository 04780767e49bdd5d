import {
  ledgerExpectation,
  NATIVE_ASSET,
  reconcileLines,
  routerBalanceEffect,
  signerNativeEffect,
  type ReconcileEvent,
} from "../../shared/protocol/reconcile";

const SIGNER = "0x00000000000000000000000000000000000000aa";
const OTHER = "0x00000000000000000000000000000000000000bb";
const TOKEN = "0x00000000000000000000000000000000000000cc";

function ev(partial: Partial<ReconcileEvent> & Pick<ReconcileEvent, "event">): ReconcileEvent {
  return {
    side: null,
    assetId: TOKEN,
    amount: "100",
    relayerFee: null,
    caller: null,
    recipient: null,
    paidBySigner: false,
    valueBooked: false,
    ...partial,
  };
}

describe("reconciliation rules (TransactionManager.sol)", () => {
  it("moves routerBalances on a receiving prepare, a sending fulfill, a receiving cancel and liquidity only", () => {
    expect(routerBalanceEffect(ev({ event: "prepared", side: "receiving" }))).toBe(-100n);
    expect(routerBalanceEffect(ev({ event: "prepared", side: "sending" }))).toBe(0n);
    expect(routerBalanceEffect(ev({ event: "fulfilled", side: "sending" }))).toBe(100n);
    // The receiving fulfill pays the user and the relayer out of what the prepare already took.
    expect(routerBalanceEffect(ev({ event: "fulfilled", side: "receiving", relayerFee: "7" }))).toBe(0n);
    expect(routerBalanceEffect(ev({ event: "cancelled", side: "receiving" }))).toBe(100n);
    expect(routerBalanceEffect(ev({ event: "cancelled", side: "sending" }))).toBe(0n);
    expect(routerBalanceEffect(ev({ event: "liquidityAdded" }))).toBe(100n);
    expect(routerBalanceEffect(ev({ event: "liquidityRemoved" }))).toBe(-100n);
  });

  it("moves the signer's native balance by native value it sent or was paid, never by tokens", () => {
    const native = { assetId: NATIVE_ASSET };
    expect(signerNativeEffect(ev({ event: "liquidityAdded", ...native, paidBySigner: true }), SIGNER)).toBe(-100n);
    // A stranger's addLiquidityFor our router: their value, not the signer's.
    expect(signerNativeEffect(ev({ event: "liquidityAdded", ...native, paidBySigner: false }), SIGNER)).toBe(0n);
    expect(signerNativeEffect(ev({ event: "liquidityRemoved", ...native, recipient: SIGNER }), SIGNER)).toBe(100n);
    expect(signerNativeEffect(ev({ event: "liquidityRemoved", ...native, recipient: OTHER }), SIGNER)).toBe(0n);
    const relayed = { event: "fulfilled" as const, side: "receiving" as const, relayerFee: "7", ...native };
    expect(signerNativeEffect(ev({ ...relayed, caller: SIGNER }), SIGNER)).toBe(7n);
    expect(signerNativeEffect(ev({ ...relayed, caller: OTHER }), SIGNER)).toBe(0n);
    expect(signerNativeEffect(ev({ event: "liquidityRemoved", recipient: SIGNER }), SIGNER)).toBe(0n);
  });

  it("expects − gas − value sent + value received of the signer, and the sum per asset", () => {
    const expected = ledgerExpectation({
      signer: SIGNER,
      gasCosts: ["21000", "50000"],
      events: [
        ev({ event: "liquidityAdded", assetId: NATIVE_ASSET, amount: "1000", paidBySigner: true }),
        ev({ event: "liquidityRemoved", assetId: NATIVE_ASSET, amount: "300", recipient: SIGNER }),
        ev({ event: "prepared", side: "receiving", amount: "40" }),
        ev({ event: "fulfilled", side: "sending", amount: "45" }),
      ],
    });
    expect(expected.gasWei).toBe(71_000n);
    expect(expected.signerNative).toBe(-71_000n - 1000n + 300n);
    expect(expected.routerBalances).toEqual(
      new Map([
        [NATIVE_ASSET, 700n],
        [TOKEN, 5n],
      ]),
    );
  });

  it("counts the signer's booked transaction values, and an event of a transaction whose value is booked only once", () => {
    const native = { assetId: NATIVE_ASSET, paidBySigner: true, valueBooked: true };
    // The value is counted from the transaction: the event of our router in it adds nothing more.
    expect(signerNativeEffect(ev({ event: "liquidityAdded", ...native }), SIGNER)).toBe(0n);
    const expected = ledgerExpectation({
      signer: SIGNER,
      gasCosts: ["21000", "50000", "30000"],
      // Our native add (1000), a native addLiquidityFor another router (a migration: no event of ours, 500), an
      // approval (0); a row booked before the column (null) counts by its event as before.
      sentValues: ["1000", "500", "0", null],
      events: [
        ev({ event: "liquidityAdded", amount: "1000", ...native }),
        ev({ event: "liquidityAdded", assetId: NATIVE_ASSET, amount: "70", paidBySigner: true }),
      ],
    });
    expect(expected.signerNative).toBe(-101_000n - 1000n - 500n - 70n);
    expect(expected.routerBalances).toEqual(new Map([[NATIVE_ASSET, 1070n]]));
  });

  it("flags drift = actual − expected above dust, per asset and for the signer", () => {
    const expected = ledgerExpectation({
      signer: SIGNER,
      gasCosts: ["10"],
      events: [ev({ event: "liquidityAdded", amount: "100" })],
    });
    const lines = reconcileLines({
      start: {
        blockNumber: 1,
        routerBalances: new Map([
          [TOKEN, 500n],
          [NATIVE_ASSET, 0n],
        ]),
        signerBalance: 1000n,
      },
      // An unbooked addLiquidity of 25 by the signer (gas 3): both show it.
      end: {
        blockNumber: 9,
        routerBalances: new Map([
          [TOKEN, 625n],
          [NATIVE_ASSET, 0n],
        ]),
        signerBalance: 987n,
      },
      expected,
    });
    expect(lines).toEqual([
      { subject: "router-balance", assetId: NATIVE_ASSET, expected: 0n, actual: 0n, drift: 0n, flagged: false },
      { subject: "router-balance", assetId: TOKEN, expected: 100n, actual: 125n, drift: 25n, flagged: true },
      { subject: "signer-native", assetId: NATIVE_ASSET, expected: -10n, actual: -13n, drift: -3n, flagged: true },
    ]);
    const tolerant = reconcileLines({
      start: { blockNumber: 1, routerBalances: new Map([[TOKEN, 0n]]), signerBalance: 0n },
      end: { blockNumber: 2, routerBalances: new Map([[TOKEN, 103n]]), signerBalance: -10n },
      expected,
      dust: 3n,
    });
    expect(tolerant.map((l) => l.flagged)).toEqual([false, false]);
  });

  it("refuses an asset the snapshots do not both hold (a caller bug, never a silent 0)", () => {
    expect(() =>
      reconcileLines({
        start: { blockNumber: 1, routerBalances: new Map(), signerBalance: 0n },
        end: { blockNumber: 2, routerBalances: new Map([[TOKEN, 1n]]), signerBalance: 0n },
        expected: ledgerExpectation({ signer: SIGNER, gasCosts: [], events: [] }),
      }),
    ).toThrow(/routerBalances/);
  });
});

import {
  gasFiguresOf,
  normaliseDecimals,
  swapFeeEarned,
  swapStatusOf,
  swapViewOf,
  usdOf,
  type SwapEventRow,
} from "../../shared/protocol/ledger";

const USDC6 = "0x00000000000000000000000000000000000000c6";
const DAI18 = "0x00000000000000000000000000000000000000d1";
const SIGNER = "0x9100000000000000000000000000000000000001";

function swap(sendingDecimals: number, receivingDecimals: number) {
  const base = {
    user: "0x5256000000000000000000000000000000005baa",
    sendingChainId: 1337,
    sendingAssetId: sendingDecimals === 6 ? USDC6 : DAI18,
    receivingChainId: 1338,
    receivingAssetId: receivingDecimals === 6 ? USDC6 : DAI18,
  };
  const ev = (
    side: SwapEventRow["side"],
    event: SwapEventRow["event"],
    amount: string,
    extra: Partial<SwapEventRow> = {},
  ): SwapEventRow => ({
    ...base,
    chainId: side === "sending" ? 1337 : 1338,
    side,
    event,
    amount,
    assetDecimals: side === "sending" ? sendingDecimals : receivingDecimals,
    ...extra,
  });
  return { ev };
}

describe("ledger: gas figures from a raw receipt", () => {
  it("is gasUsed × effectiveGasPrice + l1Fee, reverted counted, cumulativeGasUsed ignored", () => {
    const figures = gasFiguresOf({
      gasUsed: "0x5208",
      effectiveGasPrice: "0x3b9aca07",
      l1Fee: "0x2540be400",
      status: "0x0",
      cumulativeGasUsed: "0xffffff",
    } as never);
    expect(figures).toEqual({
      gasUsed: 21000n,
      effectiveGasPrice: 1_000_000_007n,
      l1FeeWei: 10_000_000_000n,
      costWei: 21000n * 1_000_000_007n + 10_000_000_000n,
      reverted: true,
    });
    expect(gasFiguresOf({ gasUsed: "0x1", effectiveGasPrice: "0x2", status: "0x1" }).l1FeeWei).toBe(0n);
    expect(() => gasFiguresOf({ gasUsed: "0x1", status: "0x1" })).toThrow(/effectiveGasPrice/);
  });
});

describe("ledger: fee earned and status", () => {
  it("6-decimal sending → 18-decimal receiving: the claimed amount is scaled up before the subtraction", () => {
    const { ev } = swap(6, 18);
    const events = [
      ev("sending", "prepared", "100000000"), // 100 USDC
      ev("receiving", "prepared", "99900000000000000000"), // 99.9 DAI
      ev("receiving", "fulfilled", "99900000000000000000"),
      ev("sending", "fulfilled", "100000000"),
    ];
    expect(swapStatusOf(events)).toBe("claimed");
    expect(swapFeeEarned(events)).toBe(100_000_000_000_000_000n); // 0.1 DAI
  });

  it("18-decimal sending → 6-decimal receiving: truncates to the receiving decimals", () => {
    const { ev } = swap(18, 6);
    const events = [
      ev("sending", "prepared", "100000000000000000999"),
      ev("receiving", "prepared", "99900000"),
      ev("receiving", "fulfilled", "99900000"),
      ev("sending", "fulfilled", "100000000000000000999"),
    ];
    expect(swapFeeEarned(events)).toBe(100_000n); // 0.1 USDC; the 999 wei below 1e-6 are truncated
    expect(normaliseDecimals(999n, 18, 6)).toBe(0n);
  });

  it("null until claimed, 0 when cancelled; status follows the events", () => {
    const { ev } = swap(18, 18);
    const prepared = [ev("sending", "prepared", "10"), ev("receiving", "prepared", "9")];
    expect(swapStatusOf(prepared)).toBe("prepared");
    expect(swapFeeEarned(prepared)).toBeNull();
    const fulfilled = [...prepared, ev("receiving", "fulfilled", "9")];
    expect(swapStatusOf(fulfilled)).toBe("fulfilled");
    expect(swapFeeEarned(fulfilled)).toBeNull();
    const cancelled = [...prepared, ev("receiving", "cancelled", "9"), ev("sending", "cancelled", "10")];
    expect(swapStatusOf(cancelled)).toBe("cancelled");
    expect(swapFeeEarned(cancelled)).toBe(0n);
  });
});

describe("ledger: the swap view's USD", () => {
  const { ev } = swap(6, 18);
  const events = [
    ev("sending", "prepared", "100000000", { assetPriceUsd: "1" }),
    ev("receiving", "prepared", "99000000000000000000", { assetPriceUsd: "1.0" }),
    ev("receiving", "fulfilled", "99000000000000000000", {
      assetPriceUsd: "1.0",
      caller: SIGNER,
      relayerFee: "500000000000000000",
      relayerFeeUsd: "0.5",
    }),
    ev("sending", "fulfilled", "100000000", { assetPriceUsd: "1" }),
  ];
  const tx = (hash: string, costUsd: string | null) => ({
    chainId: 1338,
    kind: "prepare",
    hash,
    gasUsed: "100000",
    effectiveGasPrice: "1000000000",
    l1FeeWei: "0",
    costWei: "100000000000000",
    reverted: false,
    costUsd,
  });

  it("net = fee + relayer fee (only when our signer relayed) - gas", () => {
    const view = swapViewOf({
      transactionId: "0x01",
      signer: SIGNER,
      events,
      transactions: [tx("0xa", "0.25"), tx("0xb", "0.05")],
    });
    expect(view?.feeEarned).toBe("1000000000000000000");
    expect(view?.relayerFeeEarned).toBe("500000000000000000");
    expect(view?.usd).toEqual({ feeEarned: 1, gasCost: 0.3, relayerFeeEarned: 0.5, net: 1.2 });
    expect(view?.amountIn).toBe("100000000");
    expect(view?.amountOut).toBe("99000000000000000000");

    const notOurs = swapViewOf({ transactionId: "0x01", signer: SIGNER.replace("01", "02"), events, transactions: [] });
    expect(notOurs?.relayerFeeEarned).toBe("0");
    expect(notOurs?.usd.net).toBe(1);
  });

  it("an unpriced transaction makes gasCost and net null, never 0", () => {
    const view = swapViewOf({ transactionId: "0x01", signer: SIGNER, events, transactions: [tx("0xa", null)] });
    expect(view?.usd.gasCost).toBeNull();
    expect(view?.usd.net).toBeNull();
    expect(view?.usd.feeEarned).toBe(1);
    expect(usdOf(1_500_000n, 6, 2n * 10n ** 18n)).toBe("3.0");
  });
});

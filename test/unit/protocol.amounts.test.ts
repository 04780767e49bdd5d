import {
  DEFAULT_TOLERANCE_PERCENT,
  amountAfterRouterFee,
  isWithinTolerance,
  receiverAmountFor,
} from "../../shared/protocol/amounts";
import { ProtocolInputError } from "../../shared/protocol/errors";
import {
  BID_EXPIRY_SEC,
  MAX_TIMEOUT_SEC,
  MIN_TIMEOUT_SEC,
  RECEIVER_EXPIRY_OFFSET_SEC,
  SENDER_PREPARE_BUFFER_SEC,
  isBidExpired,
  isReceiverExpiryValid,
  receiverExpiryFor,
} from "../../shared/protocol/expiry";
import { AuctionBid } from "../../shared/protocol/types";

describe("amountAfterRouterFee (docs/protocol.md#router-fee)", () => {
  it.each([
    [1_000_000_000n, 6, 6, 999_500_000n],
    [1_234_567_891_234_567_891n, 18, 6, 1_233_949n],
    [1_999n, 6, 6, 1_998n],
    [1n, 6, 6, 0n],
    [1_000_000n, 6, 18, 999_500_000_000_000_000n],
    [1_000_000_000_000_000_000_000n, 18, 6, 999_500_000n], // the test-vector bid
    [0n, 18, 6, 0n],
  ])("%s with %i -> %i decimals gives %s", (amount, inputDecimals, outputDecimals, expected) => {
    expect(amountAfterRouterFee({ amount, inputDecimals, outputDecimals })).toBe(expected);
  });

  it("refuses a negative amount and impossible decimals", () => {
    expect(() => amountAfterRouterFee({ amount: -1n, inputDecimals: 6, outputDecimals: 6 })).toThrow(
      ProtocolInputError,
    );
    expect(() => amountAfterRouterFee({ amount: 1n, inputDecimals: 6.5, outputDecimals: 6 })).toThrow(
      ProtocolInputError,
    );
    expect(() => amountAfterRouterFee({ amount: 1n, inputDecimals: 6, outputDecimals: -1 })).toThrow(
      ProtocolInputError,
    );
  });
});

describe("isWithinTolerance (docs/protocol.md#receiving-prepare, step 6)", () => {
  it.each([
    [1000n, 900n, 10, true],
    [1000n, 899n, 10, false],
    [1000n, 1100n, 10, true],
    [1000n, 1101n, 10, false],
    [1000n, 1000n, 0, true],
    [1000n, 999n, 0, false],
    [1000n, 899n, 10.9, false], // the tolerance is floored, like the original
  ])("expected %s, actual %s, %s%% -> %s", (expected, actual, tolerancePercent, within) => {
    expect(isWithinTolerance({ expected, actual, tolerancePercent })).toBe(within);
  });

  it("refuses a tolerance outside 0..100", () => {
    expect(() => isWithinTolerance({ expected: 1n, actual: 1n, tolerancePercent: 101 })).toThrow(ProtocolInputError);
    expect(() => isWithinTolerance({ expected: 1n, actual: 1n, tolerancePercent: -1 })).toThrow(ProtocolInputError);
  });
});

describe("receiverAmountFor (the signed amountReceived is honoured: docs/protocol.md#deviation-signed-amount)", () => {
  const bid = { amount: "1000000", amountReceived: "999000" } as AuctionBid;
  const tolerancePercent = DEFAULT_TOLERANCE_PERCENT;

  it("pays exactly amountReceived when the locked amount equals bid.amount", () => {
    expect(receiverAmountFor({ bid, lockedAmount: 1_000_000n, tolerancePercent })).toBe(999_000n);
  });

  it("never pays above amountReceived when more was locked", () => {
    expect(receiverAmountFor({ bid, lockedAmount: 1_100_000n, tolerancePercent })).toBe(999_000n);
  });

  it("scales amountReceived down (floor) for a fee-on-transfer token that locked less", () => {
    // 999000 * 990001 / 1000000 = 989010.999 -> 989010
    expect(receiverAmountFor({ bid, lockedAmount: 990_001n, tolerancePercent })).toBe(989_010n);
    expect(receiverAmountFor({ bid, lockedAmount: 900_000n, tolerancePercent })).toBe(899_100n);
  });

  it("returns null outside the tolerance, on either side", () => {
    expect(receiverAmountFor({ bid, lockedAmount: 899_999n, tolerancePercent })).toBeNull();
    expect(receiverAmountFor({ bid, lockedAmount: 1_100_001n, tolerancePercent })).toBeNull();
  });
});

describe("expiry rules", () => {
  const now = 1_700_000_000;

  it("has the protocol constants", () => {
    expect([MIN_TIMEOUT_SEC, MAX_TIMEOUT_SEC, RECEIVER_EXPIRY_OFFSET_SEC]).toEqual([86400, 2_592_000, 86400]);
    expect([BID_EXPIRY_SEC, SENDER_PREPARE_BUFFER_SEC]).toEqual([300, 780]);
  });

  it("puts the receiving expiry one day before the sending expiry", () => {
    expect(receiverExpiryFor(now + 3 * 86400)).toBe(now + 2 * 86400);
  });

  it.each([
    [86400, false],
    [86401, true],
    [604799, true],
    [604800, false],
  ])("receiver expiry now + %i is valid: %s (strict on both sides)", (offset, valid) => {
    expect(isReceiverExpiryValid({ receiverExpiry: now + offset, nowSec: now })).toBe(valid);
  });

  it("a bid is valid while bidExpiry > now", () => {
    expect(isBidExpired({ bidExpiry: now + 1, nowSec: now })).toBe(false);
    expect(isBidExpired({ bidExpiry: now, nowSec: now })).toBe(true);
  });
});

import { MAX_TIMEOUT_SEC, RECEIVER_EXPIRY_OFFSET_SEC } from "../../shared/protocol/expiry";
import type { TransactionData } from "../../shared/protocol/types";
import { transferExpiryOf, type TxJobData } from "../../shared/queues";
import {
  MAX_RETENTION_SEC,
  MIN_RETENTION_SEC,
  RETENTION_MARGIN_SEC,
  transferRetentionSec,
} from "../../shared/protocol/retention";

const NOW = 1_800_000_000;
const DAY = 86_400;

describe("transferRetentionSec", () => {
  it("keeps a key until the sending side's expiry plus the margin, from either side's expiry", () => {
    const sendingExpiry = NOW + 3 * DAY + 3600; // what the SDK asks for
    const receivingExpiry = sendingExpiry - RECEIVER_EXPIRY_OFFSET_SEC;
    expect(transferRetentionSec(receivingExpiry, NOW)).toBe(sendingExpiry + RETENTION_MARGIN_SEC - NOW);
    // From the sending side's own expiry it keeps one offset longer, never shorter.
    expect(transferRetentionSec(sendingExpiry, NOW)).toBe(
      sendingExpiry + RECEIVER_EXPIRY_OFFSET_SEC + RETENTION_MARGIN_SEC - NOW,
    );
    expect(transferRetentionSec(sendingExpiry, NOW)).toBeLessThan(6 * DAY);
  });

  it("still keeps a key written after the transfer expired for the minimum", () => {
    expect(transferRetentionSec(NOW - 10 * DAY, NOW)).toBe(MIN_RETENTION_SEC);
    expect(MIN_RETENTION_SEC).toBeGreaterThanOrEqual(DAY);
  });

  it("never keeps longer than the longest transfer the contract allows, nor forever on a nonsense expiry", () => {
    expect(transferRetentionSec(NOW + MAX_TIMEOUT_SEC, NOW)).toBe(MAX_RETENTION_SEC);
    expect(transferRetentionSec(NOW + 1000 * DAY, NOW)).toBe(MAX_RETENTION_SEC);
    expect(transferRetentionSec(Number.NaN, NOW)).toBe(MAX_RETENTION_SEC);
    expect(MAX_RETENTION_SEC).toBe(MAX_TIMEOUT_SEC + 2 * DAY);
  });

  it("counts in whole seconds, rounding up", () => {
    expect(Number.isInteger(transferRetentionSec(NOW + 3 * DAY + 0.4, NOW))).toBe(true);
    expect(transferRetentionSec(NOW + 3 * DAY + 0.4, NOW)).toBe(5 * DAY + 1);
  });
});

describe("transferExpiryOf (what a job's send record is kept by)", () => {
  const txData = { expiry: NOW + 3 * DAY } as TransactionData;
  it("finds the expiry in every job that acts on a transfer, and none in a liquidity removal", () => {
    const jobs: Array<[TxJobData, number | undefined]> = [
      [{ chainId: 1338, sender: { txData } } as unknown as TxJobData, NOW + 3 * DAY],
      [
        { chainId: 1337, txData, signature: "0x", relayerFee: "0", callData: "0x" } as unknown as TxJobData,
        NOW + 3 * DAY,
      ],
      [{ chainId: 1337, txData, reason: "r", force: false } as unknown as TxJobData, NOW + 3 * DAY],
      [{ chainId: 1, assetId: "0x", amount: "1", recipientAddress: "0x", requestId: "r" }, undefined],
    ];
    for (const [data, expected] of jobs) expect(transferExpiryOf(data)).toBe(expected);
  });
});

import { keccak256 } from "ethers";
import {
  Action,
  CheckSenderCancelParams,
  DecideActionParams,
  checkSenderCancel,
  decideAction,
} from "../../shared/protocol/decide";
import { ProtocolInputError } from "../../shared/protocol/errors";
import { TransactionData, TransferRecord, TransferStatus } from "../../shared/protocol/types";

const NOW = 1_700_000_000;
const LIVE_SENDER_EXPIRY = NOW + 2 * 86400;
const LIVE_RECEIVER_EXPIRY = NOW + 86400;
const EXPIRED = NOW - 1;
const OLD_PREPARE = NOW - 3600;
const FRESH_PREPARE = NOW - 100;
const TRANSACTION_ID = "0x" + "ab".repeat(32);

const TX_DATA: TransactionData = {
  receivingChainTxManagerAddress: "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113",
  user: "0x1111111111111111111111111111111111111111",
  router: "0x627306090abaB3A6e1400e9345bC60c78a8BEf57",
  initiator: "0x1111111111111111111111111111111111111111",
  sendingAssetId: "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d",
  receivingAssetId: "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174",
  sendingChainFallback: "0x1111111111111111111111111111111111111111",
  callTo: "0x0000000000000000000000000000000000000000",
  receivingAddress: "0x1111111111111111111111111111111111111111",
  sendingChainId: 56,
  receivingChainId: 137,
  callDataHash: keccak256("0x"),
  transactionId: TRANSACTION_ID,
  amount: "1000",
  expiry: LIVE_SENDER_EXPIRY,
  preparedBlockNumber: 100,
};

function record(
  side: "sender" | "receiver",
  status: TransferStatus,
  expiry: number,
  preparedTimestamp?: number,
): TransferRecord {
  const common = {
    chainId: side === "sender" ? 56 : 137,
    txData: { ...TX_DATA, expiry },
    encryptedCallData: "0x",
    encodedBid: "0x",
    bidSignature: "0x",
    prepareTransactionHash: "0x" + "01".repeat(32),
    preparedTimestamp,
  };
  if (status === "Fulfilled") {
    return {
      ...common,
      status,
      signature: "0x",
      relayerFee: "0",
      callData: "0x",
      fulfillTransactionHash: "0x" + "02".repeat(32),
    };
  }
  if (status === "Cancelled") {
    return { ...common, status, cancelTransactionHash: "0x" + "03".repeat(32) };
  }
  return { ...common, status };
}

/** `preparedTimestamp` null: the source did not give one. */
const sender = (
  status: TransferStatus,
  expiry = LIVE_SENDER_EXPIRY,
  preparedTimestamp: number | null = OLD_PREPARE,
): TransferRecord => record("sender", status, expiry, preparedTimestamp ?? undefined);
const receiver = (status: TransferStatus, expiry = LIVE_RECEIVER_EXPIRY): TransferRecord =>
  record("receiver", status, expiry);

function decide(overrides: Partial<DecideActionParams>): Action {
  return decideAction({
    nowSec: NOW,
    sendingConfirmationsSeen: true,
    receivingConfirmationsSeen: true,
    receivingChainConfigured: true,
    ...overrides,
  });
}

describe("decideAction: one row per derived state (docs/protocol.md#transfer-states) and cancel rule", () => {
  const rows: Array<[string, Partial<DecideActionParams>, Action]> = [
    // SenderPrepared
    [
      "SenderPrepared, confirmed: prepare the receiver",
      { sender: sender("Prepared") },
      { kind: "prepare-receiver", state: "SenderPrepared" },
    ],
    [
      "SenderPrepared, not yet confirmed: wait",
      { sender: sender("Prepared"), sendingConfirmationsSeen: false },
      { kind: "wait", state: "SenderPrepared", reason: "awaiting-confirmations", alert: false },
    ],
    // SenderExpired
    [
      "SenderExpired, no receiver: cancel the sender (no 780 s buffer after expiry)",
      { sender: sender("Prepared", EXPIRED, FRESH_PREPARE) },
      { kind: "cancel-sender", state: "SenderExpired", reason: "sender-expired" },
    ],
    [
      "SenderExpired, receiver Cancelled: cancel the sender without waiting for confirmations",
      {
        sender: sender("Prepared", EXPIRED),
        receiver: receiver("Cancelled", EXPIRED),
        receivingConfirmationsSeen: false,
      },
      { kind: "cancel-sender", state: "SenderExpired", reason: "sender-expired" },
    ],
    [
      "SenderExpired, receiver Prepared and live: refuse to cancel the sender (receiver-live)",
      { sender: sender("Prepared", EXPIRED), receiver: receiver("Prepared") },
      { kind: "wait", state: "SenderExpired", reason: "receiver-live", alert: true },
    ],
    // ReceiverNotConfigured
    [
      "ReceiverNotConfigured: cancel the sender",
      { sender: sender("Prepared"), receivingChainConfigured: false },
      { kind: "cancel-sender", state: "ReceiverNotConfigured", reason: "receiver-not-configured" },
    ],
    [
      "ReceiverNotConfigured, prepared < 780 s ago: sender-too-new",
      { sender: sender("Prepared", LIVE_SENDER_EXPIRY, FRESH_PREPARE), receivingChainConfigured: false },
      { kind: "wait", state: "ReceiverNotConfigured", reason: "sender-too-new", alert: false },
    ],
    [
      "ReceiverNotConfigured, prepare time unknown: wait",
      { sender: sender("Prepared", LIVE_SENDER_EXPIRY, null), receivingChainConfigured: false },
      { kind: "wait", state: "ReceiverNotConfigured", reason: "sender-prepare-time-unknown", alert: false },
    ],
    // ReceiverExpired
    [
      "ReceiverExpired, sender live: cancel the receiver",
      { sender: sender("Prepared"), receiver: receiver("Prepared", EXPIRED) },
      { kind: "cancel-receiver", state: "ReceiverExpired", reason: "receiver-expired" },
    ],
    [
      "ReceiverExpired and SenderExpired: the receiver is cancelled first, never the sender while it is Prepared",
      { sender: sender("Prepared", EXPIRED), receiver: receiver("Prepared", EXPIRED - 86400) },
      { kind: "cancel-receiver", state: "ReceiverExpired", reason: "receiver-expired" },
    ],
    [
      "ReceiverExpired, sender Fulfilled: cancel the receiver",
      { sender: sender("Fulfilled"), receiver: receiver("Prepared", EXPIRED) },
      { kind: "cancel-receiver", state: "ReceiverExpired", reason: "receiver-expired" },
    ],
    [
      "ReceiverExpired, sender Cancelled: cancel the receiver",
      { sender: sender("Cancelled"), receiver: receiver("Prepared", EXPIRED) },
      { kind: "cancel-receiver", state: "ReceiverExpired", reason: "receiver-expired" },
    ],
    [
      "ReceiverExpired with receiving data only: cancel the receiver",
      { receiver: receiver("Prepared", EXPIRED) },
      { kind: "cancel-receiver", state: "ReceiverExpired", reason: "receiver-expired" },
    ],
    // ReceiverFulfilled
    [
      "ReceiverFulfilled, confirmed: fulfill the sender",
      { sender: sender("Prepared"), receiver: receiver("Fulfilled") },
      { kind: "fulfill-sender", state: "ReceiverFulfilled" },
    ],
    [
      "ReceiverFulfilled, not yet confirmed: wait",
      { sender: sender("Prepared"), receiver: receiver("Fulfilled"), receivingConfirmationsSeen: false },
      { kind: "wait", state: "ReceiverFulfilled", reason: "awaiting-confirmations", alert: false },
    ],
    [
      "ReceiverFulfilled after the receiver's expiry, sender live: still fulfill the sender",
      { sender: sender("Prepared"), receiver: receiver("Fulfilled", EXPIRED) },
      { kind: "fulfill-sender", state: "ReceiverFulfilled" },
    ],
    [
      "ReceiverFulfilled, sender expiry == now: fulfill (the contract allows it up to expiry)",
      { sender: sender("Prepared", NOW), receiver: receiver("Fulfilled") },
      { kind: "fulfill-sender", state: "ReceiverFulfilled" },
    ],
    [
      "ReceiverFulfilled, sender expired: never cancel our own claim; wait and alert (docs/protocol.md#deviation-claim-first)",
      { sender: sender("Prepared", EXPIRED), receiver: receiver("Fulfilled", EXPIRED) },
      { kind: "wait", state: "ReceiverFulfilled", reason: "sender-expired-after-receiver-fulfilled", alert: true },
    ],
    // ReceiverCancelled
    [
      "ReceiverCancelled, confirmed: cancel the sender",
      { sender: sender("Prepared"), receiver: receiver("Cancelled") },
      { kind: "cancel-sender", state: "ReceiverCancelled", reason: "receiver-cancelled" },
    ],
    [
      "ReceiverCancelled, not yet confirmed: wait",
      { sender: sender("Prepared"), receiver: receiver("Cancelled"), receivingConfirmationsSeen: false },
      { kind: "wait", state: "ReceiverCancelled", reason: "awaiting-confirmations", alert: false },
    ],
    [
      "ReceiverCancelled, sender prepared < 780 s ago (senderPreparedAtSec wins): sender-too-new",
      { sender: sender("Prepared"), receiver: receiver("Cancelled"), senderPreparedAtSec: FRESH_PREPARE },
      { kind: "wait", state: "ReceiverCancelled", reason: "sender-too-new", alert: false },
    ],
    [
      "ReceiverCancelled, sender prepared exactly 780 s ago: cancel the sender",
      { sender: sender("Prepared"), receiver: receiver("Cancelled"), senderPreparedAtSec: NOW - 780 },
      { kind: "cancel-sender", state: "ReceiverCancelled", reason: "receiver-cancelled" },
    ],
    // Receiver Prepared and live
    [
      "receiver Prepared and live: wait for the user's fulfill",
      { sender: sender("Prepared"), receiver: receiver("Prepared") },
      { kind: "wait", state: "ReceiverPrepared", reason: "awaiting-user-fulfill", alert: false },
    ],
    [
      "receiver expiry == now is still live",
      { sender: sender("Prepared"), receiver: receiver("Prepared", NOW) },
      { kind: "wait", state: "ReceiverPrepared", reason: "awaiting-user-fulfill", alert: false },
    ],
    [
      "receiver Prepared and live on an unconfigured chain: never cancel the sender",
      { sender: sender("Prepared"), receiver: receiver("Prepared"), receivingChainConfigured: false },
      { kind: "wait", state: "ReceiverPrepared", reason: "awaiting-user-fulfill", alert: false },
    ],
    [
      "sender Cancelled while the receiver is live: wait and alert",
      { sender: sender("Cancelled"), receiver: receiver("Prepared") },
      { kind: "wait", state: "ReceiverPrepared", reason: "receiver-live", alert: true },
    ],
    // Completed
    [
      "both Fulfilled: done",
      { sender: sender("Fulfilled"), receiver: receiver("Fulfilled") },
      { kind: "done", state: "Completed", alert: false },
    ],
    [
      "both Cancelled: done",
      { sender: sender("Cancelled"), receiver: receiver("Cancelled") },
      { kind: "done", state: "Completed", alert: false },
    ],
    [
      "sender Cancelled, never a receiver: done",
      { sender: sender("Cancelled") },
      { kind: "done", state: "Completed", alert: false },
    ],
    [
      "sender Cancelled but receiver Fulfilled (router paid, not paid back): done with alert",
      { sender: sender("Cancelled"), receiver: receiver("Fulfilled") },
      { kind: "done", state: "Completed", alert: true },
    ],
    [
      "receiving data only, Fulfilled: done",
      { receiver: receiver("Fulfilled") },
      { kind: "done", state: "Completed", alert: false },
    ],
  ];

  it.each(rows)("%s", (_name, params, expected) => {
    expect(decide(params)).toEqual(expected);
  });

  it("refuses records of two different transfers", () => {
    const other = { ...receiver("Prepared"), txData: { ...TX_DATA, transactionId: "0x" + "cd".repeat(32) } };
    expect(() => decide({ sender: sender("Prepared"), receiver: other })).toThrow(ProtocolInputError);
  });

  it("never cancels the sender while the receiver is Prepared or Fulfilled, in any combination", () => {
    const statuses: TransferStatus[] = ["Prepared", "Fulfilled", "Cancelled"];
    for (const senderExpiry of [LIVE_SENDER_EXPIRY, NOW, EXPIRED]) {
      for (const receiverStatus of ["Prepared", "Fulfilled"] as TransferStatus[]) {
        for (const receiverExpiry of [LIVE_RECEIVER_EXPIRY, NOW, EXPIRED]) {
          for (const senderStatus of statuses) {
            for (const flag of [true, false]) {
              const action = decide({
                sender: sender(senderStatus, senderExpiry, FRESH_PREPARE - 10_000),
                receiver: receiver(receiverStatus, receiverExpiry),
                sendingConfirmationsSeen: flag,
                receivingConfirmationsSeen: flag,
                receivingChainConfigured: flag,
              });
              expect(action.kind).not.toBe("cancel-sender");
              expect(action.kind).not.toBe("prepare-receiver");
            }
          }
        }
      }
    }
  });
});

describe("checkSenderCancel (docs/protocol.md#cancel-rules, sending side)", () => {
  const rows: Array<[string, CheckSenderCancelParams, ReturnType<typeof checkSenderCancel>]> = [
    ["no receiver, prepared long ago", { sender: sender("Prepared"), nowSec: NOW }, { ok: true }],
    ["receiver Cancelled", { sender: sender("Prepared"), receiver: receiver("Cancelled"), nowSec: NOW }, { ok: true }],
    [
      "receiver Prepared and live (ReceiverTxExists)",
      { sender: sender("Prepared"), receiver: receiver("Prepared"), nowSec: NOW },
      { ok: false, reason: "receiver-live" },
    ],
    [
      "receiver Prepared and expired: cancel the receiver first",
      { sender: sender("Prepared"), receiver: receiver("Prepared", EXPIRED), nowSec: NOW },
      { ok: false, reason: "receiver-not-cancelled" },
    ],
    [
      "receiver Fulfilled, even past its expiry",
      { sender: sender("Prepared", EXPIRED), receiver: receiver("Fulfilled", EXPIRED), nowSec: NOW },
      { ok: false, reason: "receiver-fulfilled" },
    ],
    [
      "prepared < 780 s ago (SenderTxTooNew)",
      { sender: sender("Prepared", LIVE_SENDER_EXPIRY, NOW - 779), nowSec: NOW },
      { ok: false, reason: "sender-too-new" },
    ],
    [
      "prepared exactly 780 s ago",
      { sender: sender("Prepared", LIVE_SENDER_EXPIRY, NOW - 780), nowSec: NOW },
      { ok: true },
    ],
    [
      "prepare time unknown",
      { sender: sender("Prepared", LIVE_SENDER_EXPIRY, null), nowSec: NOW },
      { ok: false, reason: "sender-prepare-time-unknown" },
    ],
    ["sender expired: no buffer", { sender: sender("Prepared", EXPIRED, null), nowSec: NOW }, { ok: true }],
    [
      "prepared 1 s ago, refund of our own refused prepare: buffer waived",
      { sender: sender("Prepared", LIVE_SENDER_EXPIRY, NOW - 1), nowSec: NOW, prepareBufferWaived: true },
      { ok: true },
    ],
    [
      "buffer waived, but the receiver is live: still refused",
      { sender: sender("Prepared"), receiver: receiver("Prepared"), nowSec: NOW, prepareBufferWaived: true },
      { ok: false, reason: "receiver-live" },
    ],
    [
      "sender already Cancelled",
      { sender: sender("Cancelled"), nowSec: NOW },
      { ok: false, reason: "sender-not-prepared" },
    ],
  ];

  it.each(rows)("%s", (_name, params, expected) => {
    expect(checkSenderCancel(params)).toEqual(expected);
  });
});

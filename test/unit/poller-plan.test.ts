import { Wallet, ZeroAddress, keccak256 } from "ethers";
import { loadConfig } from "../../shared/config";
import { encodeBid, signBid } from "../../shared/protocol/bid";
import type { AuctionBid, TransactionData, TransferRecord } from "../../shared/protocol/types";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import type { RouterSigner } from "../../shared/signer/router-signer";
import {
  planReceiverSide,
  planSenderSide,
  type Plan,
  type PlanContext,
  type ReceivingView,
} from "../../services/poller/plan-action";
import type { PollerContext } from "../../services/poller/context";
import { PIN_RESERVATION_MS, dropHoldUnlessHonoured, holdForSender } from "../../services/poller/sender-hold";
import { TX_JOB } from "../../shared/queues";
import type { BidReservations } from "../../shared/transfers/bid-reservations";
import { captureLogs } from "../harness/logs";

const ROUTER_MNEMONIC = "candy maple cake sugar pudding cream honey rich smooth crumble sweet treat";
const ROUTER = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const USER = "0x1111111111111111111111111111111111111111";
const TM_A = "0x2A9EA5e8cDDf40730f4f4F839F673a51600C314e";
const TM_B = "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113";
const TOKEN_A = "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d";
const TOKEN_B = "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174";
const NOW = 1_700_000_000;
const PREPARED_AT = NOW - 100;
const HEAD = 100;

const config = loadConfig(
  {
    adminToken: "unit-test-admin-token",
    mnemonic: ROUTER_MNEMONIC,
    swapPools: [
      {
        assets: [
          { chainId: 1337, assetId: TOKEN_A },
          { chainId: 1338, assetId: TOKEN_B },
        ],
      },
    ],
    chainConfig: {
      "1": { providers: ["http://127.0.0.1:1"] },
      "1337": { providers: ["http://127.0.0.1:1"], transactionManagerAddress: TM_A, confirmations: 3 },
      "1338": { providers: ["http://127.0.0.1:1"], transactionManagerAddress: TM_B, confirmations: 2 },
    },
  },
  {},
).config;
const ctx: PlanContext = { config, chainId: 1337, routerAddress: ROUTER, signerAddress: ROUTER, tolerancePercent: 10 };
const receiverCtx: PlanContext = { ...ctx, chainId: 1338 };
const signer = createMnemonicSigner(ROUTER_MNEMONIC);
const FRESH: ReceivingView = {
  head: { blockNumber: 500, timestamp: NOW, syncedBlock: 500, updatedAtMs: Date.now() },
  confirmations: 2,
  fresh: true,
};
const STALE: ReceivingView = { ...FRESH, fresh: false };

const BID: AuctionBid = {
  user: USER,
  router: ROUTER,
  initiator: USER,
  sendingChainId: 1337,
  sendingAssetId: TOKEN_A,
  amount: "1000000",
  receivingChainId: 1338,
  receivingAssetId: TOKEN_B,
  amountReceived: "999500",
  receivingAddress: USER,
  transactionId: "0x" + "ab".repeat(32),
  expiry: NOW + 3 * 86400,
  callDataHash: keccak256("0x"),
  callTo: ZeroAddress,
  encryptedCallData: "0x",
  sendingChainTxManagerAddress: TM_A,
  receivingChainTxManagerAddress: TM_B,
  bidExpiry: NOW + 200,
};

function txData(patch: Partial<TransactionData> = {}): TransactionData {
  return {
    receivingChainTxManagerAddress: TM_B,
    user: USER,
    router: ROUTER,
    initiator: USER,
    sendingAssetId: TOKEN_A,
    receivingAssetId: TOKEN_B,
    sendingChainFallback: USER,
    callTo: ZeroAddress,
    receivingAddress: USER,
    sendingChainId: 1337,
    receivingChainId: 1338,
    callDataHash: keccak256("0x"),
    transactionId: BID.transactionId,
    amount: BID.amount,
    expiry: BID.expiry,
    preparedBlockNumber: 90,
    ...patch,
  };
}

async function sender(
  p: { tx?: Partial<TransactionData>; bid?: Partial<AuctionBid>; by?: RouterSigner; preparedAt?: number } = {},
): Promise<TransferRecord> {
  const bid = { ...BID, ...p.bid };
  return {
    status: "Prepared",
    chainId: 1337,
    txData: txData(p.tx),
    encryptedCallData: "0x",
    encodedBid: encodeBid(bid),
    bidSignature: await signBid(p.by ?? signer, bid),
    prepareTransactionHash: "0x" + "cd".repeat(32),
    preparedTimestamp: p.preparedAt ?? PREPARED_AT,
  };
}

function receiver(
  status: "Prepared" | "Fulfilled" | "Cancelled",
  patch: { expiry?: number; block?: number } = {},
): TransferRecord {
  const common = {
    chainId: 1338,
    txData: txData({ amount: "999500", expiry: patch.expiry ?? BID.expiry - 86400, preparedBlockNumber: 400 }),
    encryptedCallData: "0x",
    encodedBid: encodeBid(BID),
    bidSignature: "0x01",
    prepareTransactionHash: "0x" + "ef".repeat(32),
  };
  if (status === "Fulfilled") {
    return {
      ...common,
      status,
      signature: "0x99",
      relayerFee: "3",
      callData: "0x",
      fulfillTransactionHash: "0x" + "12".repeat(32),
      fulfillBlockNumber: patch.block ?? 450,
    };
  }
  return status === "Cancelled"
    ? { ...common, status, cancelTransactionHash: "0x" + "34".repeat(32), cancelBlockNumber: patch.block ?? 450 }
    : { ...common, status };
}

describe("planSenderSide", () => {
  it("enqueues prepare-receiver on the receiving chain with the sending side exactly as observed", async () => {
    const s = await sender();
    expect(planSenderSide(ctx, { sender: s, nowSec: NOW, head: HEAD, receiving: FRESH })).toEqual({
      kind: "enqueue",
      state: "SenderPrepared",
      job: {
        name: "prepare-receiver",
        chainId: 1338,
        data: {
          chainId: 1338,
          sender: {
            chainId: 1337,
            txData: s.txData,
            encryptedCallData: "0x",
            encodedBid: s.encodedBid,
            bidSignature: s.bidSignature,
            prepareTransactionHash: s.prepareTransactionHash,
            preparedTimestamp: PREPARED_AT,
          },
        },
      },
    });
  });

  it("waits for the sending chain's confirmations (prepare block + confirmations − 1 ≤ head)", async () => {
    const s = await sender({ tx: { preparedBlockNumber: 98 } });
    expect(planSenderSide(ctx, { sender: s, nowSec: NOW, head: 99, receiving: FRESH })).toMatchObject({
      kind: "wait",
      reason: "awaiting-confirmations",
    });
    expect(planSenderSide(ctx, { sender: s, nowSec: NOW, head: 100, receiving: FRESH })).toMatchObject({
      kind: "enqueue",
    });
  });

  it("turns a cancellable verification failure into a guarded cancel-sender at once: our own refusal's refund", async () => {
    const s = await sender({ by: createMnemonicSigner("test test test test test test test test test test test junk") });
    const cancel = {
      kind: "enqueue",
      state: "SenderPrepared",
      job: {
        name: "cancel-sender",
        chainId: 1337,
        data: { chainId: 1337, txData: s.txData, reason: "bid-signer-mismatch", force: false, afterOwnRefusal: true },
      },
      guard: { kind: "no-prepare-job", receivingChainId: 1338 },
    };
    // 100 s after the prepare, far inside the 780 s buffer, and whatever the receiving view says.
    expect(planSenderSide(ctx, { sender: s, nowSec: NOW, head: HEAD, receiving: FRESH })).toEqual(cancel);
    expect(planSenderSide(ctx, { sender: s, nowSec: NOW, head: HEAD, receiving: STALE })).toEqual(cancel);
    // Never while a receiving side is live.
    expect(
      planSenderSide(ctx, { sender: s, receiver: receiver("Prepared"), nowSec: NOW, head: HEAD, receiving: FRESH }),
    ).toMatchObject({ kind: "wait" });
  });

  it("declines an expired bid or a wrong amount with an immediate refund too", async () => {
    const expired = await sender({ bid: { bidExpiry: PREPARED_AT - 1 } });
    const short = await sender({ tx: { amount: "1" } });
    for (const [s, reason] of [
      [expired, "bid-expired"],
      [short, "amount-outside-tolerance"],
    ] as const) {
      expect(planSenderSide(ctx, { sender: s, nowSec: NOW, head: HEAD, receiving: FRESH })).toMatchObject({
        kind: "enqueue",
        job: { name: "cancel-sender", data: { reason, afterOwnRefusal: true } },
        guard: { kind: "no-prepare-job" },
      });
    }
  });

  it("refuses without cancelling a transfer naming another router", async () => {
    const s = await sender({ tx: { router: USER } });
    expect(planSenderSide(ctx, { sender: s, nowSec: NOW, head: HEAD, receiving: FRESH })).toMatchObject({
      kind: "refused",
      reason: "not-our-transfer",
    });
  });

  it("fulfills the sending side once the receiving fulfill has the receiving chain's confirmations", async () => {
    const s = await sender();
    const r = receiver("Fulfilled", { block: 499 });
    expect(planSenderSide(ctx, { sender: s, receiver: r, nowSec: NOW, head: HEAD, receiving: FRESH })).toMatchObject({
      kind: "enqueue",
    });
    const plan = planSenderSide(ctx, { sender: s, receiver: r, nowSec: NOW, head: HEAD, receiving: FRESH });
    expect(plan.kind === "enqueue" && plan.job).toEqual({
      name: "fulfill-sender",
      chainId: 1337,
      data: {
        chainId: 1337,
        txData: s.txData,
        signature: "0x99",
        relayerFee: "3",
        callData: "0x",
        receiverFulfillTransactionHash: "0x" + "12".repeat(32),
      },
    });
    // A sending transfer other than the one our receiving side answers (another invariant under the same id):
    // the user's signature would claim it too, so nothing is enqueued.
    const other = { ...s, txData: { ...s.txData, sendingChainFallback: "0x" + "77".repeat(20) } };
    expect(
      planSenderSide(ctx, { sender: other, receiver: r, nowSec: NOW, head: HEAD, receiving: FRESH }),
    ).toMatchObject({ kind: "wait", reason: "sender-is-another-transfer", alert: true });
    const early = receiver("Fulfilled", { block: 500 });
    expect(
      planSenderSide(ctx, { sender: s, receiver: early, nowSec: NOW, head: HEAD, receiving: FRESH }),
    ).toMatchObject({ kind: "wait", reason: "awaiting-confirmations" });
  });

  it("cancels an expired sending side only when the receiving chain's view is fresh", async () => {
    const s = await sender();
    const afterExpiry = BID.expiry + 1;
    expect(planSenderSide(ctx, { sender: s, nowSec: afterExpiry, head: HEAD, receiving: STALE })).toMatchObject({
      kind: "wait",
      reason: "receiving-view-stale",
    });
    expect(planSenderSide(ctx, { sender: s, nowSec: afterExpiry, head: HEAD, receiving: FRESH })).toMatchObject({
      kind: "enqueue",
      job: { name: "cancel-sender", data: { reason: "sender-expired", force: false } },
    });
  });

  it("cancels after a confirmed receiving cancel, and leaves an expired receiving side to its own poller", async () => {
    const s = await sender({ preparedAt: NOW - 1000 });
    expect(
      planSenderSide(ctx, { sender: s, receiver: receiver("Cancelled"), nowSec: NOW, head: HEAD, receiving: STALE }),
    ).toMatchObject({
      kind: "enqueue",
      job: { name: "cancel-sender", data: { reason: "receiver-cancelled" } },
    });
    expect(
      planSenderSide(ctx, {
        sender: s,
        receiver: receiver("Prepared", { expiry: NOW - 1 }),
        nowSec: NOW,
        head: HEAD,
        receiving: FRESH,
      }),
    ).toMatchObject({ kind: "skip" });
  });

  it("cancels a transfer to an unconfigured chain after the buffer without a receiving view", async () => {
    const s = await sender({ tx: { receivingChainId: 1339 }, preparedAt: NOW - 1000 });
    expect(planSenderSide(ctx, { sender: s, nowSec: NOW, head: HEAD })).toMatchObject({
      kind: "enqueue",
      job: { name: "cancel-sender", data: { reason: "receiver-not-configured" } },
    });
  });
});

describe("planReceiverSide", () => {
  it("cancels an expired receiving side on its own chain, with or without the sending record", async () => {
    const r = receiver("Prepared", { expiry: NOW - 1 });
    const expected = {
      kind: "enqueue",
      state: "ReceiverExpired",
      job: {
        name: "cancel-receiver",
        chainId: 1338,
        data: { chainId: 1338, txData: r.txData, reason: "receiver-expired" },
      },
    };
    expect(planReceiverSide(receiverCtx, { receiver: r, nowSec: NOW })).toEqual(expected);
    expect(planReceiverSide(receiverCtx, { receiver: r, sender: await sender(), nowSec: NOW })).toEqual(expected);
  });

  it("skips a live receiving side, and alerts when its sending side was cancelled", async () => {
    const r = receiver("Prepared");
    expect(planReceiverSide(receiverCtx, { receiver: r, sender: await sender(), nowSec: NOW })).toMatchObject({
      kind: "skip",
    });
    const cancelled: TransferRecord = {
      ...(await sender()),
      status: "Cancelled",
      cancelTransactionHash: "0x" + "56".repeat(32),
    };
    expect(planReceiverSide(receiverCtx, { receiver: r, sender: cancelled, nowSec: NOW })).toMatchObject({
      kind: "wait",
      alert: true,
    });
  });
});

/**
 * The sending poller's hard holds (services/poller/sender-hold.ts): taken only for a sending prepare that passes the
 * receiving prepare's verification, for what it locked; dropped when the transfer will not be honoured.
 */
describe("sending-side holds", () => {
  /** The calls the hold logic makes, recorded (the Redis side is bid-reservations' own tests). */
  const holdContext = (): { ctx: PollerContext; calls: Array<[string, ...unknown[]]> } => {
    const calls: Array<[string, ...unknown[]]> = [];
    const reservations = {
      pin: async (...args: unknown[]) => (calls.push(["pin", ...args]), true),
      unpin: async (...args: unknown[]) => (calls.push(["unpin", ...args]), true),
    } as unknown as BidReservations;
    return { ctx: { ...ctx, reservations, logger: captureLogs().logger } as unknown as PollerContext, calls };
  };
  const KEY = `${BID.transactionId}-${USER}`.toLowerCase();
  const UNPIN = ["unpin", 1338, TOKEN_B, KEY];
  const cancelled = async (tx: Partial<TransactionData> = {}): Promise<TransferRecord> => ({
    ...(await sender({ tx })),
    status: "Cancelled",
    cancelTransactionHash: "0x" + "56".repeat(32),
  });

  it("pins a verified sending prepare for the receiving amount of what it locked, for an hour", async () => {
    const { ctx: hold, calls } = holdContext();
    const before = Date.now();
    await holdForSender(hold, await sender({ tx: { amount: "950000" } }), NOW);
    expect(calls).toEqual([["pin", 1338, TOKEN_B, KEY, expect.any(Number), 949525n]]);
    expect(calls[0]?.[4]).toBeGreaterThanOrEqual(before + PIN_RESERVATION_MS);
  });

  it("holds nothing for a prepare that fails verification (1 unit locked, a bid signed by another key), and drops any hold", async () => {
    const stranger = createMnemonicSigner(Wallet.createRandom().mnemonic?.phrase ?? "");
    for (const record of [await sender({ tx: { amount: "1" } }), await sender({ by: stranger })]) {
      const { ctx: hold, calls } = holdContext();
      await holdForSender(hold, record, NOW);
      expect(calls).toEqual([UNPIN]);
    }
  });

  it("drops the hold once the sending side leaves Prepared", async () => {
    const { ctx: hold, calls } = holdContext();
    await holdForSender(hold, await cancelled(), NOW);
    expect(calls).toEqual([UNPIN]);
  });

  it("drops the hold when the plan refuses or cancels the sending side, and keeps it otherwise", async () => {
    const record = await sender();
    const cancel = {
      name: TX_JOB.cancelSender,
      chainId: 1337,
      data: { chainId: 1337, txData: record.txData, reason: "x", force: false },
    };
    const plans: Array<[Plan, boolean]> = [
      [{ kind: "refused", reason: "not-our-transfer", detail: "" }, true],
      [{ kind: "enqueue", state: "SenderPrepared", job: cancel }, true],
      [{ kind: "wait", state: "SenderPrepared", reason: "confirmations", alert: false }, false],
    ];
    for (const [plan, drops] of plans) {
      const { ctx: hold, calls } = holdContext();
      await dropHoldUnlessHonoured(hold, record, plan);
      expect(calls).toEqual(drops ? [UNPIN] : []);
    }
  });

  it("never touches the promise of a record naming another router, or of a transfer to a chain it does not serve", async () => {
    const { ctx: hold, calls } = holdContext();
    await holdForSender(hold, await cancelled({ router: USER }), NOW);
    await dropHoldUnlessHonoured(hold, await sender({ tx: { router: USER } }), {
      kind: "refused",
      reason: "not-our-transfer",
      detail: "",
    });
    await holdForSender(hold, await sender({ tx: { receivingChainId: 99 } }), NOW);
    expect(calls).toEqual([]);
  });
});

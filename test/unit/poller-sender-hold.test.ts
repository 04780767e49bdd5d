import { Wallet, ZeroAddress, keccak256 } from "ethers";
import { loadConfig } from "../../shared/config";
import { encodeBid, signBid } from "../../shared/protocol/bid";
import type { AuctionBid, TransferRecord } from "../../shared/protocol/types";
import { TX_JOB } from "../../shared/queues";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import type { BidReservations } from "../../shared/transfers/bid-reservations";
import type { PollerContext } from "../../services/poller/context";
import type { Plan } from "../../services/poller/plan-action";
import { PIN_RESERVATION_MS, dropHoldUnlessHonoured, holdForSender } from "../../services/poller/sender-hold";
import { captureLogs } from "../harness/logs";

/**
 * The sending poller's hard holds (services/poller/sender-hold.ts): taken only for a sending prepare that passes the
 * receiving prepare's verification, for what it locked; dropped when the transfer will not be honoured.
 */
const ROUTER_MNEMONIC = "candy maple cake sugar pudding cream honey rich smooth crumble sweet treat";
const ROUTER = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const USER = "0x1111111111111111111111111111111111111111";
const TM_A = "0x2A9EA5e8cDDf40730f4f4F839F673a51600C314e";
const TM_B = "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113";
const TOKEN_A = "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d";
const TOKEN_B = "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174";
const NOW = 1_700_000_000;

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
      "1337": { providers: ["http://127.0.0.1:1"], transactionManagerAddress: TM_A },
      "1338": { providers: ["http://127.0.0.1:1"], transactionManagerAddress: TM_B },
    },
  },
  {},
).config;

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

async function sender(
  p: { locked?: string; router?: string; status?: "Prepared" | "Cancelled"; signer?: string } = {},
): Promise<TransferRecord> {
  const common = {
    chainId: 1337,
    txData: {
      receivingChainTxManagerAddress: TM_B,
      user: USER,
      router: p.router ?? ROUTER,
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
      amount: p.locked ?? BID.amount,
      expiry: BID.expiry,
      preparedBlockNumber: 90,
    },
    encryptedCallData: "0x",
    encodedBid: encodeBid(BID),
    bidSignature: await signBid(createMnemonicSigner(p.signer ?? ROUTER_MNEMONIC), BID),
    prepareTransactionHash: "0x" + "cd".repeat(32),
    preparedTimestamp: NOW - 100,
  };
  return p.status === "Cancelled"
    ? { ...common, status: "Cancelled", cancelTransactionHash: "0x" + "34".repeat(32), cancelBlockNumber: 95 }
    : { ...common, status: "Prepared" };
}

/** The calls the hold logic makes, recorded (the Redis side is bid-reservations' own tests). */
function context(): { ctx: PollerContext; calls: Array<[string, ...unknown[]]> } {
  const calls: Array<[string, ...unknown[]]> = [];
  const reservations = {
    pin: async (...args: unknown[]) => (calls.push(["pin", ...args]), true),
    unpin: async (...args: unknown[]) => (calls.push(["unpin", ...args]), true),
  } as unknown as BidReservations;
  const ctx = {
    config,
    chainId: 1337,
    routerAddress: ROUTER,
    signerAddress: ROUTER,
    tolerancePercent: 10,
    reservations,
    logger: captureLogs().logger,
  } as unknown as PollerContext;
  return { ctx, calls };
}

const KEY = `${BID.transactionId}-${USER}`.toLowerCase();

it("pins a verified sending prepare for the receiving amount of what it locked, for an hour", async () => {
  const { ctx, calls } = context();
  const before = Date.now();
  await holdForSender(ctx, await sender({ locked: "950000" }), NOW);
  expect(calls).toEqual([["pin", 1338, TOKEN_B, KEY, expect.any(Number), 949525n]]);
  expect(calls[0]?.[4]).toBeGreaterThanOrEqual(before + PIN_RESERVATION_MS);
});

it("holds nothing for a prepare that fails verification (1 unit locked, or a bid signed by another key), and drops any hold", async () => {
  for (const record of [
    await sender({ locked: "1" }),
    await sender({ signer: Wallet.createRandom().mnemonic?.phrase }),
  ]) {
    const { ctx, calls } = context();
    await holdForSender(ctx, record, NOW);
    expect(calls).toEqual([["unpin", 1338, TOKEN_B, KEY]]);
  }
});

it("drops the hold once the sending side leaves Prepared", async () => {
  const { ctx, calls } = context();
  await holdForSender(ctx, await sender({ status: "Cancelled" }), NOW);
  expect(calls).toEqual([["unpin", 1338, TOKEN_B, KEY]]);
});

it("drops the hold when the plan refuses or cancels the sending side, and keeps it for a receiving prepare", async () => {
  const record = await sender();
  const plans: Array<[Plan, boolean]> = [
    [{ kind: "refused", reason: "not-our-transfer", detail: "" }, true],
    [
      {
        kind: "enqueue",
        state: "SenderPrepared",
        job: {
          name: TX_JOB.cancelSender,
          chainId: 1337,
          data: { chainId: 1337, txData: record.txData, reason: "x", force: false },
        },
      },
      true,
    ],
    [{ kind: "wait", state: "SenderPrepared", reason: "confirmations", alert: false }, false],
  ];
  for (const [plan, drops] of plans) {
    const { ctx, calls } = context();
    await dropHoldUnlessHonoured(ctx, record, plan);
    expect(calls).toEqual(drops ? [["unpin", 1338, TOKEN_B, KEY]] : []);
  }
});

it("never touches the promise of a record naming another router", async () => {
  const { ctx, calls } = context();
  await holdForSender(ctx, await sender({ router: USER, status: "Cancelled" }), NOW);
  await dropHoldUnlessHonoured(ctx, await sender({ router: USER }), {
    kind: "refused",
    reason: "not-our-transfer",
    detail: "",
  });
  expect(calls).toEqual([]);
});

it("leaves a transfer to a chain it does not serve alone (no promise there, nothing to verify against)", async () => {
  const { ctx, calls } = context();
  const record = await sender();
  await holdForSender(ctx, { ...record, txData: { ...record.txData, receivingChainId: 99 } }, NOW);
  expect(calls).toEqual([]);
});

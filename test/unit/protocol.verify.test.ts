import { keccak256 } from "ethers";
import { encodeBid, signBid } from "../../shared/protocol/bid";
import { invariantOf } from "../../shared/protocol/digests";
import {
  AuctionBid,
  PreparedTransferRecord,
  SwapPoolLike,
  TransactionData,
  TransferRecord,
  TransferStatus,
} from "../../shared/protocol/types";
import { VerifyFailure, VerifySenderPrepareParams, verifySenderPrepare } from "../../shared/protocol/verify-sender";
import { RouterSigner } from "../../shared/signer/router-signer";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";

const ROUTER_MNEMONIC = "candy maple cake sugar pudding cream honey rich smooth crumble sweet treat";
const OTHER_MNEMONIC = "test test test test test test test test test test test junk";
const ROUTER = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const ROUTER_CONTRACT = "0x9999999999999999999999999999999999999999";
const USER = "0x1111111111111111111111111111111111111111";
const ATTACKER = "0xbAdbAdbAdBadbAdbadBADbADBAdBaDbAdBadBaD0";
const ZERO = "0x0000000000000000000000000000000000000000";
const BSC_USDC = "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d";
const BSC_USDT = "0x55d398326f99059fF775485246999027B3197955";
const POLYGON_USDC = "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174";
const POLYGON_USDT = "0xc2132D05D31c914a87C6611C10748AEb04B58e8F";
const POLYGON_WETH = "0x7ceB23fD6bC0adD59E62ac25578270cFf1b9f619";
const BSC_TM = "0x2A9EA5e8cDDf40730f4f4F839F673a51600C314e";
const POLYGON_TM = "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113";

const NOW = 1_700_000_000;
const AUCTION_AT = NOW - 600;
const PREPARED_AT = NOW - 400;
const SENDER_EXPIRY = AUCTION_AT + 3 * 86400 + 3 * 3600; // what the SDK asks for

const POOLS: SwapPoolLike[] = [
  {
    assets: [
      { chainId: 56, assetId: BSC_USDC },
      { chainId: 137, assetId: POLYGON_USDC },
    ],
  },
  { assets: [{ chainId: 137, assetId: POLYGON_WETH }] },
];

const HONEST_BID: AuctionBid = {
  user: USER,
  router: ROUTER,
  initiator: USER,
  sendingChainId: 56,
  sendingAssetId: BSC_USDC,
  amount: "1000000000000000000000",
  receivingChainId: 137,
  receivingAssetId: POLYGON_USDC,
  amountReceived: "999400000", // docs/protocol.md#router-fee minus a gas fee of 0.1 USDC
  receivingAddress: USER,
  transactionId: "0x" + "ab".repeat(32),
  expiry: SENDER_EXPIRY,
  callDataHash: keccak256("0x"),
  callTo: ZERO,
  encryptedCallData: "0x",
  sendingChainTxManagerAddress: BSC_TM,
  receivingChainTxManagerAddress: POLYGON_TM,
  bidExpiry: AUCTION_AT + 300,
};

const routerSigner = createMnemonicSigner(ROUTER_MNEMONIC);
const otherSigner = createMnemonicSigner(OTHER_MNEMONIC);

/** The sending-side data a user prepares for `bid`, i.e. what an honest SDK puts on chain. */
function txDataFor(bid: AuctionBid): TransactionData {
  return {
    receivingChainTxManagerAddress: bid.receivingChainTxManagerAddress,
    user: bid.user,
    router: bid.router,
    initiator: bid.initiator,
    sendingAssetId: bid.sendingAssetId,
    receivingAssetId: bid.receivingAssetId,
    sendingChainFallback: bid.user,
    callTo: bid.callTo,
    receivingAddress: bid.receivingAddress,
    sendingChainId: bid.sendingChainId,
    receivingChainId: bid.receivingChainId,
    callDataHash: bid.callDataHash,
    transactionId: bid.transactionId,
    amount: bid.amount,
    expiry: bid.expiry,
    preparedBlockNumber: 30_000_000,
  };
}

interface Scenario {
  bid?: Partial<AuctionBid>;
  txData?: Partial<TransactionData>;
  /** Overrides of the sender record; `status` may be any, to test a record that is no longer Prepared. */
  record?: Omit<Partial<PreparedTransferRecord>, "status"> & { status?: TransferStatus };
  signer?: RouterSigner;
  params?: Partial<VerifySenderPrepareParams>;
}

async function run(scenario: Scenario = {}): Promise<ReturnType<typeof verifySenderPrepare>> {
  const bid = { ...HONEST_BID, ...scenario.bid };
  const txData = { ...txDataFor(bid), ...scenario.txData };
  const sender: TransferRecord = {
    status: "Prepared",
    chainId: txData.sendingChainId,
    txData,
    encryptedCallData: bid.encryptedCallData,
    encodedBid: encodeBid(bid),
    bidSignature: await signBid(scenario.signer ?? routerSigner, bid),
    prepareTransactionHash: "0x" + "cd".repeat(32),
    preparedTimestamp: PREPARED_AT,
    ...scenario.record,
  } as TransferRecord;
  return verifySenderPrepare({
    sender,
    routerSignerAddress: ROUTER,
    routerAddress: ROUTER,
    receivingTxManagerAddress: POLYGON_TM,
    sendingTxManagerAddress: BSC_TM,
    swapPools: POOLS,
    nowSec: NOW,
    tolerancePercent: 10,
    ...scenario.params,
  });
}

describe("verifySenderPrepare: honest transfers", () => {
  it("accepts the honest transfer and pays exactly the signed amountReceived", async () => {
    const result = await run();
    expect(result).toEqual({
      ok: true,
      bid: HONEST_BID,
      receiverAmount: 999_400_000n,
      receiverExpiry: SENDER_EXPIRY - 86400,
      invariant: invariantOf(txDataFor(HONEST_BID)),
    });
  });

  it("accepts on-chain data whose addresses differ only in case from the bid", async () => {
    const result = await run({
      txData: {
        user: USER.toLowerCase(),
        sendingAssetId: BSC_USDC.toLowerCase(),
        router: ROUTER.toUpperCase().replace("0X", "0x"),
      },
    });
    expect(result).toMatchObject({ ok: true });
  });

  it("scales the amount down for a fee-on-transfer token within tolerance, never paying for tokens not received", async () => {
    const result = await run({ txData: { amount: "990000000000000000000" } }); // 1 % transfer fee
    expect(result.ok && result.receiverAmount).toBe(989_406_000n);
  });

  it("accepts a bid that was valid when the user prepared although it has expired by now", async () => {
    expect(HONEST_BID.bidExpiry).toBeLessThan(NOW);
    expect(HONEST_BID.bidExpiry).toBeGreaterThan(PREPARED_AT);
    expect(await run()).toMatchObject({ ok: true });
  });

  it("accepts router-contract mode: bid.router is the Router contract, the bid is signed by the signer", async () => {
    const result = await run({ bid: { router: ROUTER_CONTRACT }, params: { routerAddress: ROUTER_CONTRACT } });
    expect(result).toMatchObject({ ok: true });
  });
});

describe("verifySenderPrepare: fraud and bad data", () => {
  const cases: Array<[string, Scenario, VerifyFailure, boolean]> = [
    ["a different user", { txData: { user: ATTACKER } }, "user-mismatch", true],
    ["a different initiator", { txData: { initiator: ATTACKER } }, "initiator-mismatch", true],
    [
      "a bid naming another router",
      { bid: { router: ROUTER_CONTRACT }, txData: { router: ROUTER } },
      "router-mismatch",
      true,
    ],
    ["a different sending chain", { txData: { sendingChainId: 10 } }, "sendingChainId-mismatch", true],
    ["a different sending asset", { txData: { sendingAssetId: BSC_USDT } }, "sendingAssetId-mismatch", true],
    ["a different receiving chain", { txData: { receivingChainId: 10 } }, "receivingChainId-mismatch", true],
    ["a different receiving asset", { txData: { receivingAssetId: POLYGON_WETH } }, "receivingAssetId-mismatch", true],
    ["a different receiving address", { txData: { receivingAddress: ATTACKER } }, "receivingAddress-mismatch", true],
    [
      "a different transactionId",
      { txData: { transactionId: "0x" + "cd".repeat(32) } },
      "transactionId-mismatch",
      true,
    ],
    ["a different expiry", { txData: { expiry: SENDER_EXPIRY + 3600 } }, "expiry-mismatch", true],
    ["a different callDataHash", { txData: { callDataHash: keccak256("0x1234") } }, "callDataHash-mismatch", true],
    ["a different callTo", { txData: { callTo: ATTACKER } }, "callTo-mismatch", true],
    ["different encryptedCallData", { record: { encryptedCallData: "0x1234" } }, "encryptedCallData-mismatch", true],
    [
      "a sending TM other than the one the record came from",
      { params: { sendingTxManagerAddress: ATTACKER } },
      "sendingChainTxManagerAddress-mismatch",
      true,
    ],
    [
      "a bid for another receiving TM than ours",
      { params: { receivingTxManagerAddress: ATTACKER } },
      "receivingChainTxManagerAddress-mismatch",
      true,
    ],
    [
      "an invariant receiving TM other than ours (the user's fulfill signature could not release the sender)",
      { txData: { receivingChainTxManagerAddress: ATTACKER } },
      "receivingChainTxManagerAddress-mismatch",
      true,
    ],
    [
      "a locked amount below tolerance",
      { txData: { amount: "850000000000000000000" } },
      "amount-outside-tolerance",
      true,
    ],
    [
      "a locked amount above tolerance",
      { txData: { amount: "1100000000000000000001" } },
      "amount-outside-tolerance",
      true,
    ],
    [
      "a bid expired before the user prepared",
      { record: { preparedTimestamp: HONEST_BID.bidExpiry } },
      "bid-expired",
      true,
    ],
    [
      "an expired bid and no prepare timestamp (compared with now)",
      { record: { preparedTimestamp: undefined } },
      "bid-expired",
      true,
    ],
    ["a bid signed by another key", { signer: otherSigner }, "bid-signer-mismatch", true],
    ["a malformed bid signature", { record: { bidSignature: "0x1234" } }, "bid-signature-malformed", true],
    ["an undecodable encodedBid", { record: { encodedBid: "0xdeadbeef" } }, "bid-undecodable", true],
    [
      "a signed pair that is in no swap pool",
      { bid: { receivingAssetId: POLYGON_USDT } },
      "pair-not-in-swap-pool",
      true,
    ],
    [
      "a pair whose assets sit in different pools",
      { bid: { receivingAssetId: POLYGON_WETH } },
      "pair-not-in-swap-pool",
      true,
    ],
    [
      "a sending expiry too close for the receiving window",
      { bid: { expiry: NOW + 2 * 86400 } },
      "receiver-expiry-invalid",
      true,
    ],
    [
      "a sending expiry too far for the receiving window",
      { bid: { expiry: NOW + 8 * 86400 } },
      "receiver-expiry-invalid",
      true,
    ],
    ["a zero receiving amount", { bid: { amountReceived: "0" } }, "receiver-amount-zero", true],
    ["a malformed sending-side field", { txData: { sendingChainFallback: "0x12" } }, "params-invalid", true],
    ["a transfer naming another router", { txData: { router: ATTACKER } }, "not-our-transfer", false],
    ["a record from the receiving chain", { record: { chainId: 137 } }, "not-sending-side", false],
    ["a sender that is no longer Prepared", { record: { status: "Cancelled" } }, "sender-not-prepared", false],
  ];

  it.each(cases)("refuses %s", async (_name, scenario, reason, cancellable) => {
    const result = await run(scenario);
    expect(result).toMatchObject({ ok: false });
    if (!result.ok) {
      expect(result.reason).toBe(reason);
      expect(result.cancellable).toBe(cancellable);
      expect(result.detail.length).toBeGreaterThan(0);
    }
  });

  it("gives every tampered bid field its own reason", () => {
    const fieldReasons = cases
      .map(([, , reason]) => reason)
      .filter((reason) => reason.endsWith("-mismatch") && reason !== "bid-signer-mismatch");
    expect(new Set(fieldReasons).size).toBe(15);
  });
});

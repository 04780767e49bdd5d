import { Wallet, ZeroAddress, keccak256 } from "ethers";
import { transactionDataMismatches, validateMetaTxRequest } from "../../shared/protocol/metatx-request";
import type { TransactionData } from "../../shared/protocol/types";
import { checkUserFulfillSignature, fulfillPayloadHash } from "../../shared/protocol/user-signatures";

const USER = new Wallet("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const TM = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const TX_DATA: TransactionData = {
  receivingChainTxManagerAddress: TM,
  user: USER.address,
  initiator: USER.address,
  router: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  sendingChainId: 1337,
  sendingAssetId: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  sendingChainFallback: USER.address,
  amount: "9995000000000000000",
  receivingChainId: 1338,
  receivingAssetId: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  receivingAddress: USER.address,
  expiry: 1795574643,
  callDataHash: "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
  callTo: ZeroAddress,
  transactionId: "0x0183" + "ab".repeat(28) + "cce9",
  preparedBlockNumber: 21,
};

/**
 * Exactly the shape the SDK 0.1.42 publishes (docs/protocol.md#metatx-request), with its redundant top-level
 * relayerFee.
 */
function sdkRequest(over: Record<string, unknown> = {}, data: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "Fulfill",
    relayerFee: "0",
    to: TM,
    chainId: 1338,
    data: { relayerFee: "0", signature: "0x" + "11".repeat(65), txData: TX_DATA, callData: "0x", ...data },
    ...over,
  };
}

describe("metatx.request payload validation", () => {
  it("accepts the SDK's Fulfill request and keeps only the known fields", () => {
    const result = validateMetaTxRequest(sdkRequest({}, { txData: { ...TX_DATA, extra: "dropped" }, note: "ignored" }));
    expect(result).toEqual({
      ok: true,
      request: {
        type: "Fulfill",
        to: TM,
        chainId: 1338,
        txData: TX_DATA,
        relayerFee: "0",
        signature: "0x" + "11".repeat(65),
        callData: "0x",
      },
    });
  });

  it("passes a declared callDataGas through", () => {
    const result = validateMetaTxRequest(sdkRequest({}, { callDataGas: "50000" }));
    expect(result.ok && result.request.callDataGas).toBe("50000");
  });

  it.each([
    "RouterContractPrepare",
    "RouterContractFulfill",
    "RouterContractCancel",
    "RouterContractRemoveLiquidity",
    "Prepare",
  ])("refuses type %s as an invalid type, naming the transaction when it can", (type) => {
    const result = validateMetaTxRequest(sdkRequest({ type, data: { params: { txData: TX_DATA } } }));
    expect(result).toMatchObject({ ok: false, reason: "invalid-type", transactionId: TX_DATA.transactionId });
  });

  it.each([
    ["no object", "hello"],
    ["an array", []],
    ["a missing type", { to: TM, chainId: 1338, data: {} }],
    ["a string chain id", sdkRequest({ chainId: "1338" })],
    ["chain id 0", sdkRequest({ chainId: 0 })],
    ["a bad `to`", sdkRequest({ to: "0x1234" })],
    ["data that is not an object", sdkRequest({ data: "0x" })],
    ["a missing signature", sdkRequest({}, { signature: undefined })],
    ["a numeric relayerFee", sdkRequest({}, { relayerFee: 0 })],
    ["a negative relayerFee", sdkRequest({}, { relayerFee: "-1" })],
    ["odd-length call data", sdkRequest({}, { callData: "0x0" })],
    ["a decimal-string expiry", sdkRequest({}, { txData: { ...TX_DATA, expiry: "1795574643" } })],
    ["preparedBlockNumber 0 (not a prepared side)", sdkRequest({}, { txData: { ...TX_DATA, preparedBlockNumber: 0 } })],
    ["a txData without user", sdkRequest({}, { txData: { ...TX_DATA, user: undefined } })],
    ["a non-decimal callDataGas", sdkRequest({}, { callDataGas: "0x10" })],
  ])("refuses %s as an invalid payload", (_label, data) => {
    const result = validateMetaTxRequest(data);
    expect(result).toMatchObject({ ok: false });
    expect(!result.ok && result.reason).toBe("invalid-payload");
  });

  it("refuses a fulfill addressed to another chain than the transfer's receiving chain", () => {
    const result = validateMetaTxRequest(sdkRequest({ chainId: 1337 }));
    expect(result).toMatchObject({ ok: false, reason: "invalid-payload", transactionId: TX_DATA.transactionId });
    expect(!result.ok && result.message).toMatch(/receiving chain 1338/);
  });

  it("refuses call data that does not hash to callDataHash (the contract would revert)", () => {
    expect(validateMetaTxRequest(sdkRequest({}, { callData: "0xabcd" }))).toMatchObject({
      ok: false,
      reason: "invalid-payload",
    });
    const withCall = { ...TX_DATA, callDataHash: keccak256("0xabcd") };
    expect(validateMetaTxRequest(sdkRequest({}, { callData: "0xabcd", txData: withCall }))).toMatchObject({ ok: true });
  });

  it("refuses a relayer fee above the amount (the contract would revert #F:023), accepts one equal to it", () => {
    const above = (BigInt(TX_DATA.amount) + 1n).toString();
    expect(validateMetaTxRequest(sdkRequest({}, { relayerFee: above }))).toMatchObject({
      ok: false,
      reason: "invalid-payload",
    });
    expect(validateMetaTxRequest(sdkRequest({}, { relayerFee: TX_DATA.amount }))).toMatchObject({ ok: true });
  });

  it("keeps the reply short when a huge value is refused", () => {
    const result = validateMetaTxRequest(sdkRequest({ to: "x".repeat(100_000) }));
    expect(!result.ok && result.message.length).toBeLessThan(1000);
  });
});

describe("txData against the recorded receiving side", () => {
  it("ignores the case of hex values and leading zeros of amounts", () => {
    const offered = {
      ...TX_DATA,
      user: TX_DATA.user.toLowerCase(),
      transactionId: TX_DATA.transactionId.toUpperCase().replace("0X", "0x"),
      amount: "0" + TX_DATA.amount,
    };
    expect(transactionDataMismatches(TX_DATA, offered)).toEqual([]);
  });

  it("names every field that differs", () => {
    const offered = {
      ...TX_DATA,
      amount: "1",
      expiry: TX_DATA.expiry + 1,
      receivingAddress: ZeroAddress,
      preparedBlockNumber: 22,
    };
    expect(transactionDataMismatches(TX_DATA, offered)).toEqual([
      "receivingAddress",
      "amount",
      "expiry",
      "preparedBlockNumber",
    ]);
  });
});

describe("the user's fulfill signature", () => {
  const payload = {
    transactionId: TX_DATA.transactionId,
    relayerFee: "5",
    receivingChainId: 1338,
    receivingChainTxManagerAddress: TM,
  };

  it("recovers to the user for the signed relayer fee only", async () => {
    const signature = await USER.signMessage(Buffer.from(fulfillPayloadHash(payload).slice(2), "hex"));
    expect(checkUserFulfillSignature({ txData: TX_DATA, relayerFee: "5", signature })).toEqual({ ok: true });
    expect(checkUserFulfillSignature({ txData: TX_DATA, relayerFee: "6", signature })).toMatchObject({
      ok: false,
      reason: "wrong-signer",
    });
  });

  it("calls a signature of another key wrong and garbage malformed, without throwing", async () => {
    const other = Wallet.createRandom();
    const signature = await other.signMessage(Buffer.from(fulfillPayloadHash(payload).slice(2), "hex"));
    expect(checkUserFulfillSignature({ txData: TX_DATA, relayerFee: "5", signature })).toEqual({
      ok: false,
      reason: "wrong-signer",
      signer: other.address,
    });
    expect(checkUserFulfillSignature({ txData: TX_DATA, relayerFee: "5", signature: "0x1234" })).toEqual({
      ok: false,
      reason: "malformed",
    });
    expect(checkUserFulfillSignature({ txData: TX_DATA, relayerFee: "x", signature: "0x1234" })).toEqual({
      ok: false,
      reason: "malformed",
    });
  });
});

import { AbiCoder, ZeroHash, keccak256 } from "ethers";
import {
  EMPTY_VARIANT_DIGEST,
  classifyVariant,
  completedVariantDigest,
  invariantDigest,
  invariantOf,
  sameInvariant,
  variantDigest,
} from "../../shared/protocol/digests";
import { ProtocolInputError } from "../../shared/protocol/errors";
import { TransactionData } from "../../shared/protocol/types";
import {
  cancelPayloadHash,
  fulfillPayloadHash,
  recoverCancelSigner,
  recoverFulfillSigner,
  signCancel,
  signFulfill,
} from "../../shared/protocol/user-signatures";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";

// docs/protocol.md#structs, #user-signatures, #test-vectors.
const MNEMONIC = "candy maple cake sugar pudding cream honey rich smooth crumble sweet treat";
const SIGNER_ADDRESS = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const TRANSACTION_ID = "0x" + "ab".repeat(32);
const RECEIVING_TM = "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113";
const FULFILL_HASH = "0xa2f855535283f4630041659d99ccb556530dd1dcc89cb225c042764652b180d9";
const CANCEL_HASH = "0xc41c3ffc700c9e500664330373f2ed6fd506bdf8e11b44657c108e5b5c358ee7";

const TX_DATA: TransactionData = {
  receivingChainTxManagerAddress: RECEIVING_TM,
  user: "0x1111111111111111111111111111111111111111",
  router: SIGNER_ADDRESS,
  initiator: "0x2222222222222222222222222222222222222222",
  sendingAssetId: "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d",
  receivingAssetId: "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174",
  sendingChainFallback: "0x3333333333333333333333333333333333333333",
  callTo: "0x4444444444444444444444444444444444444444",
  receivingAddress: "0x5555555555555555555555555555555555555555",
  sendingChainId: 56,
  receivingChainId: 137,
  callDataHash: keccak256("0x"),
  transactionId: TRANSACTION_ID,
  amount: "1000000000000000000000",
  expiry: 1700000000,
  preparedBlockNumber: 12345,
};

describe("variant digests (docs/protocol.md#structs)", () => {
  it("EMPTY_VARIANT_DIGEST is keccak256(abi.encode(0,0,0))", () => {
    expect(EMPTY_VARIANT_DIGEST).toBe("0x46700b4d40ac5c35af2c22dda2787a91eb567b06c924a8fb8ae9a05b20c08c21");
    expect(variantDigest({ amount: "0", expiry: 0, preparedBlockNumber: 0 })).toBe(EMPTY_VARIANT_DIGEST);
  });

  it("variantDigest is the keccak of three uint256 words, whatever the input representation", () => {
    const expected = keccak256(AbiCoder.defaultAbiCoder().encode(["uint256", "uint256", "uint256"], [5n, 7n, 9n]));
    expect(variantDigest({ amount: "5", expiry: 7, preparedBlockNumber: 9 })).toBe(expected);
    expect(variantDigest({ amount: 5n, expiry: 7n, preparedBlockNumber: 9n })).toBe(expected);
  });

  it("completedVariantDigest is the variant with preparedBlockNumber 0", () => {
    expect(completedVariantDigest("5", 7)).toBe(variantDigest({ amount: 5n, expiry: 7, preparedBlockNumber: 0 }));
  });
});

describe("invariantDigest (docs/protocol.md#structs)", () => {
  it("hashes the static invariant tuple in struct order (receivingAddress before callTo), with no offset word", () => {
    const coder = AbiCoder.defaultAbiCoder();
    const encoded = coder.encode(
      [
        "address",
        "address",
        "address",
        "address",
        "address",
        "address",
        "address",
        "address",
        "address",
        "uint256",
        "uint256",
        "bytes32",
        "bytes32",
      ],
      [
        TX_DATA.receivingChainTxManagerAddress,
        TX_DATA.user,
        TX_DATA.router,
        TX_DATA.initiator,
        TX_DATA.sendingAssetId,
        TX_DATA.receivingAssetId,
        TX_DATA.sendingChainFallback,
        TX_DATA.receivingAddress,
        TX_DATA.callTo,
        TX_DATA.sendingChainId,
        TX_DATA.receivingChainId,
        TX_DATA.callDataHash,
        TX_DATA.transactionId,
      ],
    );
    expect(invariantDigest(invariantOf(TX_DATA))).toBe(keccak256(encoded));
  });

  it("ignores address case and the variant fields", () => {
    const lower = { ...TX_DATA, router: SIGNER_ADDRESS.toLowerCase(), amount: "1", expiry: 1, preparedBlockNumber: 1 };
    expect(invariantDigest(invariantOf(lower))).toBe(invariantDigest(invariantOf(TX_DATA)));
  });

  it("changes when callTo and receivingAddress are swapped", () => {
    const swapped = { ...TX_DATA, callTo: TX_DATA.receivingAddress, receivingAddress: TX_DATA.callTo };
    expect(invariantDigest(invariantOf(swapped))).not.toBe(invariantDigest(invariantOf(TX_DATA)));
  });

  it("invariantOf keeps exactly the 13 invariant fields", () => {
    expect(Object.keys(invariantOf(TX_DATA)).sort()).toEqual(
      Object.keys(TX_DATA)
        .filter((key) => !["amount", "expiry", "preparedBlockNumber"].includes(key))
        .sort(),
    );
  });

  it("refuses a malformed address", () => {
    expect(() => invariantDigest(invariantOf({ ...TX_DATA, user: "0x1234" }))).toThrow(ProtocolInputError);
  });

  it("sameInvariant: the two sides of one transfer (other variants) match; any invariant field changed does not", () => {
    const receiving = { ...TX_DATA, amount: "999", expiry: TX_DATA.expiry - 86_400, preparedBlockNumber: 7 };
    expect(sameInvariant(TX_DATA, receiving)).toBe(true);
    expect(sameInvariant(TX_DATA, { ...receiving, receivingAddress: TX_DATA.user })).toBe(false);
    expect(sameInvariant(TX_DATA, { ...receiving, router: TX_DATA.initiator })).toBe(false);
  });
});

describe("classifyVariant (docs/protocol.md#sanitation-check)", () => {
  const variant = { amount: TX_DATA.amount, expiry: TX_DATA.expiry, preparedBlockNumber: TX_DATA.preparedBlockNumber };

  it.each([
    ["the zero word", ZeroHash, "not-prepared"],
    ["the prepared digest", variantDigest(variant), "prepared-matching"],
    [
      "the prepared digest in upper case",
      variantDigest(variant).toUpperCase().replace("0X", "0x"),
      "prepared-matching",
    ],
    ["the fulfilled/cancelled digest", completedVariantDigest(TX_DATA.amount, TX_DATA.expiry), "completed"],
    ["a digest of another amount", variantDigest({ ...variant, amount: "1" }), "mismatch"],
    ["a digest of another prepared block", variantDigest({ ...variant, preparedBlockNumber: 1 }), "mismatch"],
    ["EMPTY_VARIANT_DIGEST", EMPTY_VARIANT_DIGEST, "mismatch"],
  ])("classifies %s", (_name, actual, expected) => {
    expect(classifyVariant(actual, variant)).toBe(expected);
  });

  it("treats a variant with preparedBlockNumber 0 as completed, never as actionable", () => {
    const zeroBlock = { ...variant, preparedBlockNumber: 0 };
    expect(classifyVariant(variantDigest(zeroBlock), zeroBlock)).toBe("completed");
  });
});

describe("user fulfill / cancel payloads (docs/protocol.md#user-signatures)", () => {
  const signer = createMnemonicSigner(MNEMONIC);
  const fulfill = {
    transactionId: TRANSACTION_ID,
    relayerFee: 0n,
    receivingChainId: 137,
    receivingChainTxManagerAddress: RECEIVING_TM,
  };
  const cancel = { transactionId: TRANSACTION_ID, receivingChainId: 137, receivingChainTxManagerAddress: RECEIVING_TM };

  it("hashes the test-vector fulfill payload (relayerFee 0)", () => {
    expect(fulfillPayloadHash(fulfill)).toBe(FULFILL_HASH);
    expect(fulfillPayloadHash({ ...fulfill, relayerFee: "0" })).toBe(FULFILL_HASH);
  });

  it("hashes the test-vector cancel payload", () => {
    expect(cancelPayloadHash(cancel)).toBe(CANCEL_HASH);
  });

  it("binds the relayer fee, the chain and the TransactionManager", () => {
    expect(fulfillPayloadHash({ ...fulfill, relayerFee: 1n })).not.toBe(FULFILL_HASH);
    expect(fulfillPayloadHash({ ...fulfill, receivingChainId: 56 })).not.toBe(FULFILL_HASH);
    expect(cancelPayloadHash({ ...cancel, receivingChainTxManagerAddress: SIGNER_ADDRESS })).not.toBe(CANCEL_HASH);
  });

  it("signs and recovers fulfill and cancel signatures", async () => {
    const fulfillSig = await signFulfill(signer, fulfill);
    const cancelSig = await signCancel(signer, cancel);
    expect(recoverFulfillSigner(fulfill, fulfillSig)).toBe(SIGNER_ADDRESS);
    expect(recoverCancelSigner(cancel, cancelSig)).toBe(SIGNER_ADDRESS);
    expect(recoverFulfillSigner({ ...fulfill, relayerFee: 1n }, fulfillSig)).not.toBe(SIGNER_ADDRESS);
    expect(recoverCancelSigner(cancel, fulfillSig)).not.toBe(SIGNER_ADDRESS);
  });
});

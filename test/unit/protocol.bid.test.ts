import { getBytes, keccak256, verifyMessage } from "ethers";
import { decodeBid, encodeBid, hashBid, recoverBidSigner, signBid } from "../../shared/protocol/bid";
import { BidDecodeError, ProtocolInputError } from "../../shared/protocol/errors";
import { AuctionBid } from "../../shared/protocol/types";
import { RouterSigner } from "../../shared/signer/router-signer";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";

// docs/protocol.md#test-vectors.
const MNEMONIC = "candy maple cake sugar pudding cream honey rich smooth crumble sweet treat";
const SIGNER_ADDRESS = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const BID_HASH = "0x59d43a1d7af4812a76481bd3cc4e57b585d50271d21949354b34a685c57f601f";
const BID_SIGNATURE =
  "0x3bca718664ffcb0bd7c973db2093fda73929a03af71b3e2808a72645700ce9c553ad991c7b193b324cefae666fd58501569316fc467ae09323be523f83373b431b";
const USER = "0x1111111111111111111111111111111111111111";
const ZERO = "0x0000000000000000000000000000000000000000";

const VECTOR_BID: AuctionBid = {
  user: USER,
  router: SIGNER_ADDRESS,
  initiator: USER,
  sendingChainId: 56,
  sendingAssetId: "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d",
  amount: "1000000000000000000000",
  receivingChainId: 137,
  receivingAssetId: "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174",
  amountReceived: "999500000",
  receivingAddress: USER,
  transactionId: "0x" + "ab".repeat(32),
  expiry: 1700000000,
  callDataHash: keccak256("0x"),
  callTo: ZERO,
  encryptedCallData: "0x",
  sendingChainTxManagerAddress: "0x2A9EA5e8cDDf40730f4f4F839F673a51600C314e",
  receivingChainTxManagerAddress: "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113",
  bidExpiry: 1699700000,
};

describe("encodeBid / hashBid (docs/protocol.md#bid-encoding)", () => {
  it("encodes the test-vector bid as one dynamic tuple of 640 bytes starting with the 0x20 offset word", () => {
    const encoded = encodeBid(VECTOR_BID);
    expect(getBytes(encoded)).toHaveLength(640);
    expect(encoded.slice(2, 66)).toBe("00".repeat(31) + "20");
  });

  it("hashes the test-vector bid to the published bid hash, from the bid or from its encoding", () => {
    expect(hashBid(VECTOR_BID)).toBe(BID_HASH);
    expect(hashBid(encodeBid(VECTOR_BID))).toBe(BID_HASH);
  });

  it("ignores address case, including a mixed case with a bad checksum (the SDK copies case as sent)", () => {
    const badChecksum = "0x8ac76a51cc950d9822D68b83fE1Ad97B32Cd580d";
    expect(hashBid({ ...VECTOR_BID, sendingAssetId: badChecksum, router: SIGNER_ADDRESS.toLowerCase() })).toBe(
      BID_HASH,
    );
  });

  it("refuses amounts that are not decimal integer strings instead of letting the ABI coder reinterpret them", () => {
    expect(() => encodeBid({ ...VECTOR_BID, amount: "0x10" })).toThrow(ProtocolInputError);
    expect(() => encodeBid({ ...VECTOR_BID, amountReceived: "1.5" })).toThrow(ProtocolInputError);
    expect(() => encodeBid({ ...VECTOR_BID, expiry: 1.5 })).toThrow(ProtocolInputError);
  });
});

describe("decodeBid", () => {
  it("round-trips the test-vector bid", () => {
    expect(decodeBid(encodeBid(VECTOR_BID))).toEqual(VECTOR_BID);
  });

  it("returns checksummed addresses, JSON numbers and string amounts whatever case was encoded", () => {
    const lower: AuctionBid = {
      ...VECTOR_BID,
      router: SIGNER_ADDRESS.toLowerCase(),
      sendingAssetId: VECTOR_BID.sendingAssetId.toLowerCase(),
      transactionId: VECTOR_BID.transactionId.toUpperCase().replace("0X", "0x"),
      encryptedCallData: "0xDEADBEEF",
    };
    const decoded = decodeBid(encodeBid(lower));
    expect(decoded.router).toBe(SIGNER_ADDRESS);
    expect(decoded.sendingAssetId).toBe(VECTOR_BID.sendingAssetId);
    expect(decoded.transactionId).toBe(VECTOR_BID.transactionId);
    expect(decoded.encryptedCallData).toBe("0xdeadbeef");
    expect(typeof decoded.sendingChainId).toBe("number");
    expect(typeof decoded.bidExpiry).toBe("number");
    expect(decoded.amount).toBe("1000000000000000000000");
  });

  it("refuses garbage, truncated and non-canonical (trailing bytes) encodings", () => {
    const encoded = encodeBid(VECTOR_BID);
    expect(() => decodeBid("0x1234")).toThrow(BidDecodeError);
    expect(() => decodeBid(encoded.slice(0, -64))).toThrow(BidDecodeError);
    expect(() => decodeBid(encoded + "00".repeat(32))).toThrow(BidDecodeError);
    expect(() => decodeBid("not hex")).toThrow(BidDecodeError);
  });

  it("refuses a chain id too large for a JSON number", () => {
    const encoded = encodeBid({ ...VECTOR_BID });
    // sendingChainId is the 4th head word (after the offset word): set it to 2^64.
    const words = encoded.slice(2).match(/.{64}/g) as string[];
    words[4] = (1n << 64n).toString(16).padStart(64, "0");
    expect(() => decodeBid("0x" + words.join(""))).toThrow(BidDecodeError);
  });
});

describe("signBid / recoverBidSigner", () => {
  const signer = createMnemonicSigner(MNEMONIC);

  it("signs the test-vector bid to exactly the published signature (EIP-191 over the 32 raw hash bytes)", async () => {
    const signature = await signBid(signer, VECTOR_BID);
    expect(signature).toBe(BID_SIGNATURE);
    expect(verifyMessage(getBytes(BID_HASH), signature)).toBe(SIGNER_ADDRESS);
  });

  it("recovers the signer from the bid or from its encoding", () => {
    expect(recoverBidSigner(VECTOR_BID, BID_SIGNATURE)).toBe(SIGNER_ADDRESS);
    expect(recoverBidSigner(encodeBid(VECTOR_BID), BID_SIGNATURE)).toBe(SIGNER_ADDRESS);
  });

  it("recovers a different address once any field changes", () => {
    expect(recoverBidSigner({ ...VECTOR_BID, amountReceived: "999500001" }, BID_SIGNATURE)).not.toBe(SIGNER_ADDRESS);
  });

  it("rewrites a signer's recovery id v 0/1 to 27/28", async () => {
    const rawV: RouterSigner = {
      ...signer,
      signMessage: async (message) => {
        const sig = await signer.signMessage(message);
        return sig.slice(0, -2) + (Number.parseInt(sig.slice(-2), 16) - 27).toString(16).padStart(2, "0");
      },
    };
    await expect(signBid(rawV, VECTOR_BID)).resolves.toBe(BID_SIGNATURE);
  });

  it("throws on a malformed signature", () => {
    expect(() => recoverBidSigner(VECTOR_BID, "0x1234")).toThrow();
  });
});

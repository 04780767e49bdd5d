import { getAddress, hexlify, keccak256, randomBytes } from "ethers";
import { encodeBid } from "../../shared/protocol/bid";
import { encodeBidFast } from "../../shared/protocol/bid-encoder";
import { ProtocolInputError } from "../../shared/protocol/errors";
import type { AuctionBid } from "../../shared/protocol/types";

// docs/protocol.md#test-vectors.
const USER = "0x1111111111111111111111111111111111111111";
const VECTOR_BID: AuctionBid = {
  user: USER,
  router: "0x627306090abaB3A6e1400e9345bC60c78a8BEf57",
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
  callTo: "0x0000000000000000000000000000000000000000",
  encryptedCallData: "0x",
  sendingChainTxManagerAddress: "0x2A9EA5e8cDDf40730f4f4F839F673a51600C314e",
  receivingChainTxManagerAddress: "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113",
  bidExpiry: 1699700000,
};

const randomAddress = (): string => {
  const a = hexlify(randomBytes(20));
  // Mix the cases the wire may carry: lowercase, checksummed, uppercase hex digits.
  const r = Math.random();
  return r < 0.33 ? a : r < 0.66 ? getAddress(a) : "0x" + a.slice(2).toUpperCase();
};
const randomUint = (): string => BigInt(hexlify(randomBytes(1 + Math.floor(Math.random() * 32)))).toString();

function randomBid(): AuctionBid {
  return {
    user: randomAddress(),
    router: randomAddress(),
    initiator: randomAddress(),
    sendingChainId: Math.floor(Math.random() * 2 ** 40),
    sendingAssetId: randomAddress(),
    amount: randomUint(),
    receivingChainId: Math.floor(Math.random() * 2 ** 40),
    receivingAssetId: randomAddress(),
    amountReceived: randomUint(),
    receivingAddress: randomAddress(),
    transactionId: hexlify(randomBytes(32)),
    expiry: Math.floor(Math.random() * Number.MAX_SAFE_INTEGER),
    callDataHash: hexlify(randomBytes(32)).toUpperCase().replace("0X", "0x"),
    callTo: randomAddress(),
    encryptedCallData: hexlify(randomBytes(Math.floor(Math.random() * 200))),
    sendingChainTxManagerAddress: randomAddress(),
    receivingChainTxManagerAddress: randomAddress(),
    bidExpiry: Math.floor(Math.random() * 2 ** 40),
  };
}

describe("encodeBidFast", () => {
  it("gives the test vector's bytes and hash", () => {
    const fast = encodeBidFast(VECTOR_BID);
    expect(fast).toBe(encodeBid(VECTOR_BID));
    expect((fast.length - 2) / 2).toBe(640);
    expect(keccak256(fast)).toBe("0x59d43a1d7af4812a76481bd3cc4e57b585d50271d21949354b34a685c57f601f");
  });

  it("matches the ABI coder on 300 random bids (call data lengths 0..199, mixed address case)", () => {
    for (let i = 0; i < 300; i += 1) {
      const bid = randomBid();
      expect(encodeBidFast(bid)).toBe(encodeBid(bid));
    }
  });

  it("matches at the uint256 and call data padding edges", () => {
    for (const callData of ["0x", "0x00", "0x" + "ff".repeat(31), "0x" + "ff".repeat(32), "0x" + "ff".repeat(33)]) {
      const bid = {
        ...VECTOR_BID,
        encryptedCallData: callData,
        amount: ((1n << 256n) - 1n).toString(),
        amountReceived: "0",
      };
      expect(encodeBidFast(bid)).toBe(encodeBid(bid));
    }
  });

  it.each([
    ["a short address", { user: "0x1234" }],
    ["a non-decimal amount", { amount: "0x10" }],
    ["an amount of 2^256", { amount: (1n << 256n).toString() }],
    ["odd-length call data", { encryptedCallData: "0xabc" }],
    ["a fractional chain id", { sendingChainId: 1.5 }],
    ["a short transaction id", { transactionId: "0xabab" }],
  ])("refuses %s", (_name, patch) => {
    expect(() => encodeBidFast({ ...VECTOR_BID, ...patch } as AuctionBid)).toThrow(ProtocolInputError);
  });
});

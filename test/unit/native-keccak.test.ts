import { getBytes, hashMessage, keccak256, randomBytes } from "ethers";
import { hashMessageBytes, keccak256Bytes, keccakBackend } from "../../shared/signer/native-keccak";

describe("native keccak", () => {
  it("loads the keccak package's native state on the build machines", () => {
    expect(keccakBackend()).toBe("native");
  });

  it("hashes byte-identically to ethers on either backend, across the 136-byte block boundary", () => {
    for (const length of [0, 1, 31, 32, 135, 136, 137, 272, 640, 1000]) {
      for (let i = 0; i < 20; i++) {
        const data = randomBytes(length);
        const reference = keccak256(data);
        expect(`0x${keccak256Bytes(data).toString("hex")}`).toBe(reference);
        expect(`0x${keccak256Bytes(data, "ethers").toString("hex")}`).toBe(reference);
      }
    }
  });

  it("hashes EIP-191 messages as ethers' hashMessage does, bytes and strings", () => {
    for (const message of [getBytes(keccak256("0xabcdef")), randomBytes(0), randomBytes(100), "hello", "héllo ✓", ""]) {
      expect(`0x${hashMessageBytes(message).toString("hex")}`).toBe(hashMessage(message));
      expect(`0x${hashMessageBytes(message, "ethers").toString("hex")}`).toBe(hashMessage(message));
    }
  });
});

import { SigningKey, Wallet, getBytes, keccak256, randomBytes, verifyMessage } from "ethers";
import { createDigestSigner } from "../../shared/signer/digest-signer";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";

describe("digest signer", () => {
  it("loads the native libsecp256k1 binding on the build machines", () => {
    const { backend } = createDigestSigner(new SigningKey(keccak256("0x01")));
    expect(backend).toBe("native");
  });

  it("signs byte-identically to ethers for random keys and digests", () => {
    for (let i = 0; i < 200; i++) {
      const key = new SigningKey(randomBytes(32));
      const digest = keccak256(randomBytes(32));
      const native = createDigestSigner(key, "native");
      const reference = createDigestSigner(key, "ethers");
      expect(native.sign(digest)).toBe(reference.sign(digest));
      expect(native.sign(digest)).toBe(key.sign(digest).serialized);
    }
  });

  it("gives the mnemonic signer the same EIP-191 signatures on either backend", async () => {
    const phrase = Wallet.createRandom().mnemonic?.phrase ?? "";
    const fast = createMnemonicSigner(phrase);
    const slow = createMnemonicSigner(phrase, { digestBackend: "ethers" });
    const message = getBytes(keccak256("0xabcdef"));
    const signature = await fast.signMessage(message);
    expect(signature).toBe(await slow.signMessage(message));
    expect(verifyMessage(message, signature)).toBe(await fast.getAddress());
  });
});

import { createHash } from "node:crypto";
import { Wallet, verifyMessage } from "ethers";
import { AUTH_MESSAGE_PREFIX, authMessage } from "../../shared/messaging";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";

describe("messaging auth message (docs/protocol.md#login)", () => {
  it("is byte-exact: three lines, the second two spaces, ending with ': '", () => {
    const lines = AUTH_MESSAGE_PREFIX.split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(
      "Hi there from Connext! Sign this message to make sure that no one can communicate on the Connext Network on your behalf. This will not cost you any Ether!",
    );
    expect(lines[1]).toBe("  ");
    expect(lines[2]).toBe("To stop hackers from using your wallet, here's a unique message ID that they can't guess: ");
    expect(Buffer.byteLength(AUTH_MESSAGE_PREFIX)).toBe(248);
    expect(createHash("sha256").update(AUTH_MESSAGE_PREFIX).digest("hex")).toBe(
      "ed59c8f260a85fb16fe10477641ba788b7aeea3c708d4c05f9e1b65e8656b3fd",
    );
  });

  it("is what the router signer personal_signs: the auth server recovers the signer from prefix + nonce", async () => {
    const wallet = Wallet.createRandom();
    const signer = createMnemonicSigner(wallet.mnemonic?.phrase ?? "");
    const nonce = `0x${"ab".repeat(32)}`;
    const sig = await signer.signMessage(authMessage(nonce));
    expect(verifyMessage(AUTH_MESSAGE_PREFIX + nonce, sig)).toBe(wallet.address);
    expect(sig).toBe(await wallet.signMessage(AUTH_MESSAGE_PREFIX + nonce));
  });
});

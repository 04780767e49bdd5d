import { AbiCoder, ZeroAddress, getBytes, keccak256, verifyMessage } from "ethers";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import {
  encodeRemoveLiquidityPayload,
  recoverRemoveLiquiditySigner,
  removeLiquidityPayloadHash,
  signRemoveLiquidity,
  type RemoveLiquiditySignaturePayload,
} from "../../shared/protocol/router-signatures";
import { ProtocolInputError } from "../../shared/protocol/errors";

// docs/protocol.md#test-vectors signer.
const MNEMONIC = "candy maple cake sugar pudding cream honey rich smooth crumble sweet treat";
const ADDRESS = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const TOKEN = "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174";

const payload: RemoveLiquiditySignaturePayload = {
  amount: "1000000",
  assetId: TOKEN,
  routerRelayerFeeAsset: ZeroAddress,
  routerRelayerFee: 0n,
  chainId: 137,
};

describe("removeLiquidity router signature (docs/protocol.md#router-signatures)", () => {
  it("encodes the static tuple as five words with no offset word", () => {
    const encoded = encodeRemoveLiquidityPayload(payload);
    expect((encoded.length - 2) / 64).toBe(5);
    const expected = AbiCoder.defaultAbiCoder().encode(
      ["uint256", "address", "address", "uint256", "uint256"],
      [1_000_000n, TOKEN, ZeroAddress, 0n, 137n],
    );
    expect(encoded).toBe(expected);
    expect(removeLiquidityPayloadHash(payload)).toBe(keccak256(expected));
  });

  it("is signed EIP-191 over the hash bytes and recovers to the router signer", async () => {
    const signer = createMnemonicSigner(MNEMONIC);
    const signature = await signRemoveLiquidity(signer, payload);
    expect(recoverRemoveLiquiditySigner(payload, signature)).toBe(ADDRESS);
    expect(verifyMessage(getBytes(removeLiquidityPayloadHash(payload)), signature)).toBe(ADDRESS);
    // Signing the hex text instead of the bytes would recover to someone else.
    expect(verifyMessage(removeLiquidityPayloadHash(payload), signature)).not.toBe(ADDRESS);
  });

  it("commits to every field: another chain, fee or amount recovers to a different address", async () => {
    const signature = await signRemoveLiquidity(createMnemonicSigner(MNEMONIC), payload);
    for (const changed of [{ chainId: 1 }, { routerRelayerFee: 1n }, { amount: "1000001" }, { assetId: ZeroAddress }]) {
      expect(recoverRemoveLiquiditySigner({ ...payload, ...changed }, signature)).not.toBe(ADDRESS);
    }
  });

  it("treats address case as meaningless", () => {
    expect(removeLiquidityPayloadHash({ ...payload, assetId: TOKEN.toLowerCase() })).toBe(
      removeLiquidityPayloadHash(payload),
    );
  });

  it("refuses values it cannot encode", () => {
    expect(() => removeLiquidityPayloadHash({ ...payload, amount: "1.5" })).toThrow(ProtocolInputError);
    expect(() => removeLiquidityPayloadHash({ ...payload, assetId: "0x12" })).toThrow(ProtocolInputError);
  });
});

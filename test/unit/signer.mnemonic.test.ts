import { Transaction, getBytes, verifyMessage } from "ethers";
import { createSigner } from "../../shared/signer/create-signer";
import { SignerConfigError, UnsignedTransactionInvalidError } from "../../shared/signer/errors";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { UnsignedTransaction, sanitizeSignatureV } from "../../shared/signer/router-signer";

// docs/protocol.md#test-vectors.
const MNEMONIC = "candy maple cake sugar pudding cream honey rich smooth crumble sweet treat";
const ADDRESS = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const BID_HASH = "0x59d43a1d7af4812a76481bd3cc4e57b585d50271d21949354b34a685c57f601f";
const BID_SIGNATURE =
  "0x3bca718664ffcb0bd7c973db2093fda73929a03af71b3e2808a72645700ce9c553ad991c7b193b324cefae666fd58501569316fc467ae09323be523f83373b431b";

const LEGACY_TX: UnsignedTransaction = {
  type: 0,
  chainId: 56,
  nonce: 7,
  to: "0x2A9EA5e8cDDf40730f4f4F839F673a51600C314e",
  data: "0xdeadbeef",
  value: 1n,
  gasLimit: 210_000n,
  gasPrice: 5_000_000_000n,
};

const EIP1559_TX: UnsignedTransaction = {
  type: 2,
  chainId: 137n,
  nonce: 0,
  to: "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113",
  data: "0x",
  value: 0n,
  gasLimit: 500_000n,
  maxFeePerGas: 100_000_000_000n,
  maxPriorityFeePerGas: 30_000_000_000n,
};

describe("createMnemonicSigner", () => {
  const signer = createMnemonicSigner(MNEMONIC);

  it("derives account 0 of the test-vector mnemonic, checksummed", async () => {
    expect(signer.kind).toBe("mnemonic");
    await expect(signer.getAddress()).resolves.toBe(ADDRESS);
  });

  it("signs the test-vector bid hash as 32 raw bytes to exactly the published bid signature", async () => {
    await expect(signer.signMessage(getBytes(BID_HASH))).resolves.toBe(BID_SIGNATURE);
  });

  it("signs a string message as EIP-191 personal_sign with v 27/28", async () => {
    const sig = await signer.signMessage("hello router");
    expect(sig).toMatch(/^0x[0-9a-f]{128}(1b|1c)$/);
    expect(verifyMessage("hello router", sig)).toBe(ADDRESS);
  });

  it("signs a legacy (EIP-155) transaction that parses back with the same fields and sender", async () => {
    const parsed = Transaction.from(await signer.signTransaction(LEGACY_TX));
    expect(parsed.from).toBe(ADDRESS);
    expect(parsed.type).toBe(0);
    expect(parsed.chainId).toBe(56n);
    expect(parsed.nonce).toBe(7);
    expect(parsed.to).toBe(LEGACY_TX.to);
    expect(parsed.data).toBe(LEGACY_TX.data);
    expect(parsed.value).toBe(1n);
    expect(parsed.gasLimit).toBe(210_000n);
    expect(parsed.gasPrice).toBe(5_000_000_000n);
    // v = chainId * 2 + 35/36 proves replay protection is in the signature.
    expect([147n, 148n]).toContain(parsed.signature?.networkV);
  });

  it("signs an EIP-1559 transaction that parses back with the same fields and sender", async () => {
    const parsed = Transaction.from(await signer.signTransaction(EIP1559_TX));
    expect(parsed.from).toBe(ADDRESS);
    expect(parsed.type).toBe(2);
    expect(parsed.chainId).toBe(137n);
    expect(parsed.nonce).toBe(0);
    expect(parsed.to).toBe(EIP1559_TX.to);
    expect(parsed.data).toBe("0x");
    expect(parsed.value).toBe(0n);
    expect(parsed.gasLimit).toBe(500_000n);
    expect(parsed.maxFeePerGas).toBe(100_000_000_000n);
    expect(parsed.maxPriorityFeePerGas).toBe(30_000_000_000n);
  });

  it("refuses a transaction missing the fee fields of its type instead of signing a zero fee", async () => {
    const { gasPrice: _gasPrice, ...noGasPrice } = LEGACY_TX;
    await expect(signer.signTransaction(noGasPrice)).rejects.toBeInstanceOf(UnsignedTransactionInvalidError);
    const { maxFeePerGas: _maxFee, ...noMaxFee } = EIP1559_TX;
    await expect(signer.signTransaction(noMaxFee)).rejects.toBeInstanceOf(UnsignedTransactionInvalidError);
  });

  it("refuses an ENS name as `to` rather than resolving it over a network", async () => {
    await expect(signer.signTransaction({ ...EIP1559_TX, to: "router.eth" })).rejects.toBeInstanceOf(
      UnsignedTransactionInvalidError,
    );
  });

  it("keeps the mnemonic off every enumerable property of the signer", () => {
    const dumped = JSON.stringify(signer) + Object.keys(signer).join(",");
    for (const word of MNEMONIC.split(" ")) {
      expect(dumped).not.toContain(word);
    }
  });

  it("throws SignerConfigError on an invalid phrase without echoing any of its words", () => {
    const bad = "candy maple cake sugar pudding cream honey rich smooth crumble sweet zzzzzq";
    let thrown: unknown;
    try {
      createMnemonicSigner(bad);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(SignerConfigError);
    const err = thrown as SignerConfigError;
    expect(err.code).toBe("SIGNER_CONFIG_INVALID");
    expect(err.retriable).toBe(false);
    expect(err.message).toBe("mnemonic is not a valid BIP-39 phrase");
    const text = `${err.message} ${err.stack ?? ""} ${JSON.stringify(err)} ${String(err.cause)}`;
    for (const word of bad.split(" ")) {
      expect(text).not.toContain(word);
    }
  });

  it("throws SignerConfigError on a phrase with a bad checksum", () => {
    const badChecksum = MNEMONIC.replace("treat", "candy");
    expect(() => createMnemonicSigner(badChecksum)).toThrow(SignerConfigError);
  });
});

describe("sanitizeSignatureV", () => {
  const rs = "0x" + "ab".repeat(64);

  it("rewrites v 0 and 1 to 27 and 28", () => {
    expect(sanitizeSignatureV(rs + "00")).toBe(rs + "1b");
    expect(sanitizeSignatureV(rs + "01")).toBe(rs + "1c");
  });

  it("leaves v 27 and 28 unchanged", () => {
    expect(sanitizeSignatureV(rs + "1b")).toBe(rs + "1b");
    expect(sanitizeSignatureV(rs + "1c")).toBe(rs + "1c");
  });

  it("turns a recovery-id signature of the test-vector bid into the published one", () => {
    const lowV = BID_SIGNATURE.slice(0, -2) + "00";
    expect(sanitizeSignatureV(lowV)).toBe(BID_SIGNATURE);
    expect(verifyMessage(getBytes(BID_HASH), sanitizeSignatureV(lowV))).toBe(ADDRESS);
  });

  it("rejects input that is not 65 bytes of hex", () => {
    expect(() => sanitizeSignatureV("0x1234")).toThrow(TypeError);
    expect(() => sanitizeSignatureV(rs.slice(2) + "1b")).toThrow(TypeError);
  });
});

describe("createSigner", () => {
  it("builds a mnemonic signer when only the mnemonic is set", () => {
    expect(createSigner({ mnemonic: MNEMONIC }).kind).toBe("mnemonic");
  });

  it("builds a remote signer when only the URL is set, without contacting it", () => {
    expect(createSigner({ remoteSignerUrl: "http://127.0.0.1:9000" }).kind).toBe("remote");
  });

  it.each([
    ["neither source", {}],
    ["both sources", { mnemonic: MNEMONIC, remoteSignerUrl: "http://127.0.0.1:9000" }],
    ["blank strings only", { mnemonic: " ", remoteSignerUrl: "" }],
  ])("throws SignerConfigError for %s", (_label, cfg) => {
    expect(() => createSigner(cfg)).toThrow(SignerConfigError);
  });

  it("does not echo the mnemonic when both sources are set", () => {
    let thrown: unknown;
    try {
      createSigner({ mnemonic: MNEMONIC, remoteSignerUrl: "http://127.0.0.1:9000" });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(SignerConfigError);
    expect(`${(thrown as Error).message} ${JSON.stringify(thrown)}`).not.toContain("candy");
  });
});

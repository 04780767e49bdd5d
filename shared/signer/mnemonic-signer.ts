import { HDNodeWallet, SigningKey, computeAddress } from "ethers";
import { createDigestSigner, type DigestSignerBackend } from "./digest-signer";
import { hashMessageBytes } from "./native-keccak";
import { SignerConfigError } from "./errors";
import { RouterSigner, UnsignedTransaction, sanitizeSignatureV, toEthersTransaction } from "./router-signer";

/** Account 0 of the standard Ethereum derivation, the one NXTP v0 routers use. */
export const DEFAULT_DERIVATION_PATH = "m/44'/60'/0'/0/0";

/**
 * A signer holding the key in process memory. Only the derived SigningKey is kept, inside a closure:
 * the HDNodeWallet (whose `mnemonic` is a public property) is dropped after derivation, so the phrase
 * is not reachable from the returned object, JSON.stringify, or a log line that dumps it.
 */
export function createMnemonicSigner(
  mnemonic: string,
  options: { digestBackend?: DigestSignerBackend } = {},
): RouterSigner {
  const signingKey = deriveSigningKey(mnemonic);
  const address = computeAddress(signingKey);
  const signDigest = createDigestSigner(signingKey, options.digestBackend).sign;

  const signer: RouterSigner = {
    kind: "mnemonic",
    getAddress: async () => address,
    signMessage: async (message) => sanitizeSignatureV(signDigest(hashMessageBytes(message))),
    signTransaction: async (tx: UnsignedTransaction) => {
      // Signing the unsigned hash directly (not Wallet.signTransaction) guarantees nothing is resolved
      // over a provider, and yields exactly the bytes the remote signer path produces.
      const transaction = toEthersTransaction(tx);
      transaction.signature = signingKey.sign(transaction.unsignedHash);
      return transaction.serialized;
    },
  };
  return Object.freeze(signer);
}

function deriveSigningKey(mnemonic: string): SigningKey {
  try {
    return HDNodeWallet.fromPhrase(mnemonic, undefined, DEFAULT_DERIVATION_PATH).signingKey;
  } catch {
    // No cause and no echo: the underlying error or a message could carry the phrase into a log.
    throw new SignerConfigError("mnemonic is not a valid BIP-39 phrase");
  }
}

import { SignerConfigError } from "./errors";
import { createMnemonicSigner } from "./mnemonic-signer";
import { createRemoteSigner } from "./remote-signer";
import { RouterSigner } from "./router-signer";

export interface CreateSignerConfig {
  mnemonic?: string;
  remoteSignerUrl?: string;
}

/**
 * Picks the key source. Config validation already demands exactly one; this guard keeps a caller that
 * skipped validation from silently preferring one key over the other.
 */
export function createSigner(cfg: CreateSignerConfig): RouterSigner {
  const { mnemonic, remoteSignerUrl } = cfg;
  if (isSet(remoteSignerUrl) && !isSet(mnemonic)) {
    return createRemoteSigner({ url: remoteSignerUrl });
  }
  if (isSet(mnemonic) && !isSet(remoteSignerUrl)) {
    return createMnemonicSigner(mnemonic);
  }
  throw new SignerConfigError("exactly one of mnemonic and remoteSignerUrl must be set", {
    mnemonicSet: isSet(mnemonic),
    remoteSignerUrlSet: isSet(remoteSignerUrl),
  });
}

function isSet(value: string | undefined): value is string {
  return typeof value === "string" && value.trim() !== "";
}

import { Wallet } from "ethers";

/** A fresh random mnemonic: a router signer (or a requester) no other test uses. */
export function randomMnemonic(): string {
  const phrase = Wallet.createRandom().mnemonic?.phrase;
  if (!phrase) throw new Error("random wallet without mnemonic");
  return phrase;
}

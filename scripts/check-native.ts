/**
 * `npm run check-native`: which native builds this install loads (README, "Install footprint"). Each has a pure
 * JavaScript fallback the router uses when the native build does not load, with the same results, only slower:
 *   keccak            bid and message hashes (native ~6 µs, ethers ~100 µs a bid)
 *   secp256k1         bid signatures (native ~40 µs, ethers ~375 µs)
 *   msgpackr-extract  BullMQ's job (de)serialisation through msgpackr
 * Exit code 0 either way: a fallback is slower, never wrong.
 */
import { SigningKey, hexlify, randomBytes } from "ethers";
import { createDigestSigner } from "../shared/signer/digest-signer";
import { keccakBackend } from "../shared/signer/native-keccak";

export interface NativeReport {
  readonly keccak: "native" | "ethers";
  readonly secp256k1: "native" | "ethers";
  readonly msgpackrExtract: boolean;
}

export function nativeReport(): NativeReport {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- msgpackr (BullMQ's) ships no typed flag
  const msgpackr = require("msgpackr") as { isNativeAccelerationEnabled?: boolean };
  return {
    keccak: keccakBackend(),
    secp256k1: createDigestSigner(new SigningKey(hexlify(randomBytes(32)))).backend,
    msgpackrExtract: msgpackr.isNativeAccelerationEnabled === true,
  };
}

if (require.main === module) {
  const r = nativeReport();
  const line = (name: string, native: boolean, fallback: string): string =>
    `${name.padEnd(17)}${native ? "native build loaded" : `not loaded: ${fallback}`}`;
  process.stdout.write(
    [
      line("keccak", r.keccak === "native", "ethers' JavaScript keccak256 (about 15× slower per bid)"),
      line("secp256k1", r.secp256k1 === "native", "ethers' JavaScript ECDSA (about 9× slower per bid)"),
      line("msgpackr-extract", r.msgpackrExtract, "msgpackr's JavaScript decoder"),
    ].join("\n") + "\n",
  );
}

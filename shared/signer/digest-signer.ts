import { SigningKey, getBytes } from "ethers";

/** Signs a 32-byte digest (0x-hex or bytes): 65 bytes r‖s‖v as 0x-hex, v in {27, 28}, low-s, RFC 6979 nonce. */
export type DigestSigner = (digest: string | Uint8Array) => string;

export type DigestSignerBackend = "native" | "ethers";

interface NativeSecp256k1 {
  ecdsaSign(msg32: Uint8Array, seckey: Uint8Array): { signature: Uint8Array; recid: number };
}

let nativeModule: NativeSecp256k1 | null | undefined;

/**
 * libsecp256k1 through the `secp256k1` package's prebuilt N-API binding, or null where it does not load (an
 * unusual platform, a missing prebuild). Loaded once; the pure-JS path of that package is never used, since
 * ethers' own is the reference.
 */
function loadNative(): NativeSecp256k1 | null {
  if (nativeModule === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional native binding, no types shipped
      nativeModule = require("secp256k1/bindings") as NativeSecp256k1;
    } catch {
      nativeModule = null;
    }
  }
  return nativeModule;
}

/**
 * The bid signature is the auction's largest CPU cost: ethers' pure-JS ECDSA takes ~375 µs a signature on the
 * build machines, libsecp256k1 ~40 µs, with byte-identical output (both use RFC 6979 nonces and low-s
 * normalisation; a unit test compares them). The native path is used when it loads, else ethers.
 */
export function createDigestSigner(
  signingKey: SigningKey,
  preferred: DigestSignerBackend = "native",
): { sign: DigestSigner; backend: DigestSignerBackend } {
  const native = preferred === "native" ? loadNative() : null;
  if (!native) {
    return { sign: (digest) => signingKey.sign(digest).serialized, backend: "ethers" };
  }
  const secret = getBytes(signingKey.privateKey);
  const v27 = "1b";
  const v28 = "1c";
  return {
    backend: "native",
    sign: (digest) => {
      const { signature, recid } = native.ecdsaSign(typeof digest === "string" ? getBytes(digest) : digest, secret);
      return `0x${Buffer.from(signature.buffer, signature.byteOffset, 64).toString("hex")}${recid === 0 ? v27 : v28}`;
    },
  };
}

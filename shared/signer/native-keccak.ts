import { dirname } from "node:path";
import { MessagePrefix, getBytes, keccak256, toUtf8Bytes } from "ethers";

/**
 * keccak256 for the auction's hot path. Every bid hashes its ~600-byte encoding and then the EIP-191 message:
 * ethers' pure-JS keccak (@noble/hashes) takes ~100 µs for the first, the `keccak` package's native state
 * ~6 µs, with identical output (a unit test compares them). The native state is used when it loads and
 * passes a known vector, else ethers.
 */

interface KeccakState {
  initialize(rate: number, capacity: number): void;
  absorb(data: Uint8Array): void;
  absorbLastFewBits(bits: number): void;
  squeeze(length: number): Buffer;
}
type KeccakStateClass = new () => KeccakState;

export type KeccakBackend = "native" | "ethers";

/** keccak256("") */
const EMPTY_KECCAK = "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470";
const MESSAGE_PREFIX = Buffer.from(toUtf8Bytes(MessagePrefix));

let nativeState: KeccakStateClass | null | undefined;

/**
 * The `keccak` package's N-API state class, loaded the way the package loads it (node-gyp-build from its own
 * directory) rather than through its stream-based API, whose per-hash Transform costs more than the hash.
 */
function loadNative(): KeccakStateClass | null {
  if (nativeState === undefined) {
    try {
      const dir = dirname(require.resolve("keccak/package.json"));
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- the package's own loader, no types shipped
      const load = require(require.resolve("node-gyp-build", { paths: [dir] })) as (d: string) => unknown;
      const State = load(dir) as KeccakStateClass;
      nativeState =
        typeof State === "function" && hashWith(State, Buffer.alloc(0)).toString("hex") === EMPTY_KECCAK ? State : null;
    } catch {
      nativeState = null;
    }
  }
  return nativeState;
}

function hashWith(State: KeccakStateClass, data: Uint8Array): Buffer {
  const state = new State();
  state.initialize(1088, 512); // keccak256: rate 1088 bits, capacity 512
  state.absorb(data);
  state.absorbLastFewBits(0x01); // keccak padding (SHA3-256 would be 0x06)
  return state.squeeze(32);
}

/** Which implementation keccak256Bytes uses in this process. */
export function keccakBackend(): KeccakBackend {
  return loadNative() ? "native" : "ethers";
}

/** keccak256 of `data` as 32 bytes. */
export function keccak256Bytes(data: Uint8Array, backend: KeccakBackend = "native"): Buffer {
  const State = backend === "native" ? loadNative() : null;
  if (State) {
    return hashWith(State, data);
  }
  return Buffer.from(getBytes(keccak256(data)));
}

/** ethers' `hashMessage` (EIP-191: "\x19Ethereum Signed Message:\n" + byte length + message) as 32 bytes. */
export function hashMessageBytes(message: string | Uint8Array, backend: KeccakBackend = "native"): Buffer {
  const bytes = typeof message === "string" ? toUtf8Bytes(message) : message;
  return keccak256Bytes(Buffer.concat([MESSAGE_PREFIX, Buffer.from(String(bytes.length)), bytes]), backend);
}

import { dirname, join } from "node:path";
import { HDNodeWallet, JsonRpcProvider, Wallet, toQuantity, type Provider } from "ethers";
import { findBinary, startOnFreePort } from "./child-process";

export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

/** Private keys of `m/44'/60'/0'/0/i`, i = 0..9, precomputed because HD derivation costs ~ms per key. */
export const ANVIL_KEYS: readonly string[] = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
  "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
];

/** Wallet for anvil's default account `index` (each starts with 10 000 ETH). */
export function anvilWallet(index: number, provider?: Provider): Wallet {
  const key = ANVIL_KEYS[index] ?? HDNodeWallet.fromPhrase(ANVIL_MNEMONIC, undefined, `m/44'/60'/0'/0/${index}`).privateKey;
  return new Wallet(key, provider ?? null);
}

/**
 * ethers provider tuned for a local chain: no network detection round-trip, fast polling, no batching delay,
 * and no 250 ms request cache (it served a stale `getTransactionCount` and caused "nonce too low").
 */
export function anvilProvider(url: string, chainId: number): JsonRpcProvider {
  return new JsonRpcProvider(url, chainId, { staticNetwork: true, pollingInterval: 50, batchMaxCount: 1, cacheTimeout: -1 });
}

function packagedAnvil(): string[] {
  try {
    return [join(dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin", "anvil")];
  } catch {
    return []; // not installed: fall back to PATH
  }
}

export function anvilBinary(): string {
  // The pinned npm binary wins over any foundry install on PATH.
  return findBinary("anvil", {
    preferred: packagedAnvil(),
    missingHint: "anvil not found: npm install @foundry-rs/anvil-linux-amd64 (devDependency)",
  });
}

export interface StartAnvilOptions {
  readonly chainId: number;
  /** Interval mining instead of automine. */
  readonly blockTimeSec?: number;
  /** Mine only on `mine()`. */
  readonly noMining?: boolean;
}

export interface Anvil {
  readonly url: string;
  readonly port: number;
  readonly chainId: number;
  readonly pid: number;
  stop(): Promise<void>;
  rpc<T>(method: string, params?: readonly unknown[]): Promise<T>;
  mine(blocks?: number): Promise<void>;
  /** Shifts the timestamp of the next mined block forward. */
  increaseTime(seconds: number): Promise<void>;
  setAutomine(on: boolean): Promise<void>;
  setBalance(address: string, wei: bigint): Promise<void>;
}

interface JsonRpcReply {
  result?: unknown;
  error?: { code?: number; message?: string };
}

async function jsonRpc(url: string, method: string, params: readonly unknown[], timeoutMs: number): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const reply = (await res.json()) as JsonRpcReply;
  if (reply.error) {
    throw new Error(`${method} failed: ${reply.error.message ?? "unknown error"} (code ${String(reply.error.code)})`);
  }
  return reply.result;
}

const RPC_TIMEOUT_MS = 10_000;

export async function startAnvil(opts: StartAnvilOptions): Promise<Anvil> {
  if (!Number.isSafeInteger(opts.chainId) || opts.chainId <= 0) {
    throw new RangeError(`startAnvil: chainId must be a positive integer, got ${opts.chainId}`);
  }
  const modeArgs = [
    ...(opts.blockTimeSec !== undefined ? ["--block-time", String(opts.blockTimeSec)] : []),
    ...(opts.noMining ? ["--no-mining"] : []),
  ];
  const expectedChainId = toQuantity(opts.chainId);
  const { proc, port } = await startOnFreePort({
    name: `anvil(${opts.chainId})`,
    command: anvilBinary(),
    args: (p) => ["--host", "127.0.0.1", "--port", String(p), "--chain-id", String(opts.chainId), "--silent", ...modeArgs],
    probe: async (p, timeoutMs) => {
      const chainId = await jsonRpc(`http://127.0.0.1:${p}`, "eth_chainId", [], timeoutMs);
      if (typeof chainId !== "string" || BigInt(chainId) !== BigInt(expectedChainId)) {
        throw new Error(`eth_chainId answered ${String(chainId)}, expected ${expectedChainId}`);
      }
      return true;
    },
  });
  const url = `http://127.0.0.1:${port}`;
  const rpc = async <T>(method: string, params: readonly unknown[] = []): Promise<T> =>
    (await jsonRpc(url, method, params, RPC_TIMEOUT_MS)) as T;

  return {
    url,
    port,
    chainId: opts.chainId,
    pid: proc.pid,
    stop: proc.stop,
    rpc,
    mine: async (blocks = 1) => {
      await rpc("anvil_mine", [toQuantity(blocks)]);
    },
    increaseTime: async (seconds) => {
      await rpc("evm_increaseTime", [seconds]);
    },
    setAutomine: async (on) => {
      await rpc("evm_setAutomine", [on]);
    },
    setBalance: async (address, wei) => {
      await rpc("anvil_setBalance", [address, toQuantity(wei)]);
    },
  };
}

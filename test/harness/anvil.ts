import { toQuantity } from "ethers";
import { ANVIL_KEYS, ANVIL_MNEMONIC, anvilProvider, anvilWallet } from "../../scripts/local/anvil-accounts";
import { anvilBinary } from "../../scripts/local/binaries";
import { anvilAnswers, anvilArgs, jsonRpc } from "../../scripts/local/probes";
import { startOnFreePort } from "./child-process";

// Moved to scripts/local (npm run local uses them too); re-exported for the tests' imports.
export { ANVIL_KEYS, ANVIL_MNEMONIC, anvilBinary, anvilProvider, anvilWallet };

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

const RPC_TIMEOUT_MS = 10_000;

export async function startAnvil(opts: StartAnvilOptions): Promise<Anvil> {
  if (!Number.isSafeInteger(opts.chainId) || opts.chainId <= 0) {
    throw new RangeError(`startAnvil: chainId must be a positive integer, got ${opts.chainId}`);
  }
  const { proc, port } = await startOnFreePort({
    name: `anvil(${opts.chainId})`,
    command: anvilBinary(),
    args: (p) => anvilArgs(p, opts.chainId, opts),
    probe: (p, timeoutMs) => anvilAnswers(p, opts.chainId, timeoutMs),
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

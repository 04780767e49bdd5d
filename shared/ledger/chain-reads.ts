import { ZeroAddress } from "ethers";
import type { ChainProvider } from "../chain/chain-provider";
import { createDecimalsReader, type DecimalsReader } from "../chain/router-balances";
import type { RawReceiptGas } from "../protocol/ledger";

/** The raw receipt as the node sent it: ethers' parsed receipt drops fields it does not know (OP-stack `l1Fee`). */
export interface RawReceipt extends RawReceiptGas {
  readonly transactionHash: string;
  readonly blockNumber: string;
  readonly blockHash: string;
  readonly from: string;
  readonly to: string | null;
  readonly logs: ReadonlyArray<{
    readonly address: string;
    readonly topics: readonly string[];
    readonly data: string;
    readonly logIndex: string;
    readonly blockNumber: string;
    readonly transactionHash: string;
  }>;
}

export async function readRawReceipt(provider: ChainProvider, hash: string): Promise<RawReceipt | null> {
  return provider.read(
    (p) => p.send("eth_getTransactionReceipt", [hash]) as Promise<RawReceipt | null>,
    "eth_getTransactionReceipt",
  );
}

/** The transaction's value (msg.value) in wei; null when the node does not know the transaction. */
export async function readTransactionValue(provider: ChainProvider, hash: string): Promise<bigint | null> {
  const tx = await provider.read(
    (p) => p.send("eth_getTransactionByHash", [hash]) as Promise<{ value: string } | null>,
    "eth_getTransactionByHash",
  );
  return tx === null ? null : BigInt(tx.value);
}

/** Decimals per (chain, asset), cached for the process's life (a token's decimals never change); native = 18. */
export function createDecimalsLookup(providerFor: (chainId: number) => ChainProvider) {
  const readers = new Map<number, DecimalsReader>();
  return (chainId: number, assetId: string): Promise<number> => {
    if (assetId.toLowerCase() === ZeroAddress) return Promise.resolve(18);
    let reader = readers.get(chainId);
    if (!reader) {
      reader = createDecimalsReader(providerFor(chainId));
      readers.set(chainId, reader);
    }
    return reader(assetId);
  };
}

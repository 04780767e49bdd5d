import type { Provider, TransactionReceipt } from "ethers";
import { TransactionRevertedError } from "../../shared/chain/errors";
import { errorMessage } from "../../shared/errors";
import { sleep, withTimeout } from "../../shared/timing";
import { ReceiptTimeoutError } from "./errors";

/**
 * Far above any local chain's mining time, below every stack start's deadline (test/harness/stack.ts): a receipt
 * that never comes fails here, with the transaction's name, instead of at jest's bound with the stack leaked.
 */
export const RECEIPT_TIMEOUT_MS = 30_000;
const RECEIPT_POLL_MS = 100;

export interface ReceiptWait {
  readonly provider: Provider;
  readonly hash: string;
  /** What sent it, for the errors: a method ("addRouter"), "deploy TransactionManager", "transfer to 0x…". */
  readonly what: string;
  readonly chainId: bigint | number;
  readonly timeoutMs?: number;
}

/**
 * The receipt of `hash`, read by polling eth_getTransactionReceipt, each read bounded too. ethers' `tx.wait()`
 * and `waitForDeployment()` wait on the provider's block events, and one missed event can leave them waiting for
 * ever. A status-0 receipt throws TransactionRevertedError; no receipt within the bound, ReceiptTimeoutError.
 */
export async function waitForReceipt(w: ReceiptWait): Promise<TransactionReceipt> {
  const timeoutMs = w.timeoutMs ?? RECEIPT_TIMEOUT_MS;
  const context = { hash: w.hash, what: w.what, chainId: String(w.chainId) };
  const named = `${w.what}: transaction ${w.hash} on chain ${String(w.chainId)}`;
  const deadline = Date.now() + timeoutMs;
  let lastProblem = "no receipt yet";
  for (;;) {
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) {
      throw new ReceiptTimeoutError(`${named} has no receipt after ${timeoutMs} ms (${lastProblem})`, context);
    }
    try {
      const receipt = await withTimeout(w.provider.getTransactionReceipt(w.hash), remainingMs);
      if (receipt) {
        if (receipt.status !== 1) {
          throw new TransactionRevertedError(`${named} reverted (block ${receipt.blockNumber})`, context);
        }
        return receipt;
      }
      lastProblem = "no receipt yet";
    } catch (err) {
      if (err instanceof TransactionRevertedError) throw err;
      // A failed read (a refused or slow connection) is retried until the deadline; the last one is named then.
      lastProblem = `last read failed: ${errorMessage(err)}`;
    }
    await sleep(Math.min(RECEIPT_POLL_MS, Math.max(0, deadline - Date.now())));
  }
}

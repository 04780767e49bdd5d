import type { TransactionReceipt } from "ethers";
import { errorCode, errorMessage } from "../../../shared/errors";
import type { SendContext } from "./send-context";
import { createThrottle, sleepUnlessShuttingDown, throwIfShuttingDown } from "./timing";

const WARN_INTERVAL_MS = 30_000;

/**
 * Waits until `head - receipt.blockNumber + 1 >= confirmations`, then re-fetches the receipt: if it is gone
 * the block was re-orged away (undefined: the caller goes back to waiting for mining); if it moved to
 * another block the count starts again from there. Returns the receipt that held.
 */
export async function waitForConfirmations(
  ctx: SendContext,
  mined: TransactionReceipt,
): Promise<TransactionReceipt | undefined> {
  let receipt = mined;
  const shouldWarn = createThrottle(WARN_INTERVAL_MS);
  for (;;) {
    throwIfShuttingDown(ctx.signal);
    try {
      const head = await ctx.provider.getBlockNumber();
      if (head - receipt.blockNumber + 1 >= ctx.chain.confirmations) {
        const again = await ctx.provider.getTransactionReceipt(receipt.hash);
        if (!again) {
          return undefined;
        }
        if (again.blockHash === receipt.blockHash) {
          return again;
        }
        ctx.logger.warn("transaction re-mined in another block; counting confirmations again", {
          at: "submitter.confirm",
          transactionHash: receipt.hash,
          fromBlock: receipt.blockNumber,
          toBlock: again.blockNumber,
        });
        receipt = again;
        continue;
      }
    } catch (err) {
      if (shouldWarn()) {
        ctx.logger.warn("cannot read the chain head; still waiting for confirmations", {
          at: "submitter.confirm",
          code: errorCode(err),
          error: errorMessage(err),
        });
      }
    }
    await sleepUnlessShuttingDown(ctx.pollIntervalMs, ctx.signal);
  }
}

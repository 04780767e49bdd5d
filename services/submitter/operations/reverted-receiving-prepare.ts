import { readVariantTransactionData } from "../../../shared/chain/router-balances";
import { NOT_PREPARED_VARIANT_DIGEST, invariantDigest, invariantOf } from "../../../shared/protocol/digests";
import type { TransactionData } from "../../../shared/protocol/types";
import { sameHex } from "../../../shared/protocol/values";
import { TX_JOB, transferKey, txJobId } from "../../../shared/queues/jobs";
import { loadTxRecordOn } from "../send/tx-record";
import { chainConfigOf, readProviderOf, type LifecycleContext } from "./lifecycle";

/** What the receiving chain and the router's own send record say of a transfer's recorded receiving prepare. */
export type RevertedPrepareProof =
  /** Its transaction was mined reverted, `confirmations` deep, and the receiving side is not prepared: it is over. */
  | { readonly kind: "final"; readonly transactionHash: string; readonly blockNumber: number }
  /** Mined reverted, not yet `confirmations` deep: a re-org could still mine the same signed transaction. */
  | { readonly kind: "not-final"; readonly transactionHash: string; readonly depth: number; readonly required: number }
  /** Nothing proves the prepare can no longer take effect. */
  | { readonly kind: "none"; readonly detail: string };

/**
 * Whether the transfer's receiving prepare was mined reverted for good, proven only from the prepare-receiver job's
 * own send record and the receiving chain, never from anything a requester or a job's data can set:
 * 1. the record (under the job's deterministic id on the receiving chain) is `reverted`: the job failed for good and
 *    a re-run finds the record and sends nothing. A prepare-receiver record is never archived (only a claim's is),
 *    so a missing record proves nothing;
 * 2. its call went to the TransactionManager itself (direct mode): there only the router's signer may prepare a
 *    receiving side (#P:016), and every transaction of the job has a nonce up to the reverted one's. A Router
 *    contract call carries a router signature anyone may relay again later (Router.sol keeps no nonce): no proof;
 * 3. the reverted receipt is at least the receiving chain's `confirmations` deep: its nonce is used for good, so
 *    none of the job's transactions can still be mined (`not-final` until then);
 * 4. at the head read in 3 the receiving side is not prepared (variantTransactionData zero).
 */
export async function proveReceivingPrepareReverted(
  ctx: LifecycleContext,
  txData: TransactionData,
): Promise<RevertedPrepareProof> {
  const chainId = txData.receivingChainId;
  const jobId = txJobId(TX_JOB.prepareReceiver, transferKey(txData.transactionId, txData.user));
  const record = await loadTxRecordOn({ redis: ctx.redis, prefix: ctx.config.redisPrefix, chainId }, jobId);
  if (record?.status !== "reverted" || record.revertedHash === undefined) {
    return { kind: "none", detail: `the prepare-receiver record is ${record?.status ?? "absent"}, not reverted` };
  }
  const chain = chainConfigOf(ctx, chainId);
  if (!sameHex(record.call.to, chain.transactionManagerAddress)) {
    return { kind: "none", detail: "the reverted prepare called the Router contract: its signature can be relayed" };
  }
  const provider = readProviderOf(ctx, chainId);
  // The head first: the receipt is then read at a head at least as new, so its depth is never overstated.
  const head = await provider.getBlockNumber();
  const receipt = await provider.getTransactionReceipt(record.revertedHash);
  if (!receipt || receipt.status !== 0) {
    return { kind: "none", detail: `the receiving chain shows no reverted receipt for ${record.revertedHash}` };
  }
  const depth = head - receipt.blockNumber + 1;
  if (depth < chain.confirmations) {
    return { kind: "not-final", transactionHash: receipt.hash, depth, required: chain.confirmations };
  }
  const digest = invariantDigest(invariantOf(txData));
  const variant = await readVariantTransactionData(provider, chain.transactionManagerAddress, digest, head);
  if (variant !== NOT_PREPARED_VARIANT_DIGEST) {
    return { kind: "none", detail: `the receiving side is prepared on chain at block ${head}` };
  }
  return { kind: "final", transactionHash: receipt.hash, blockNumber: receipt.blockNumber };
}

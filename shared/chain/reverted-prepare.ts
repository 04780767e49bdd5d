import type { Redis } from "ioredis";
import type { ChainProvider } from "./chain-provider";
import { readVariantTransactionData } from "./router-balances";
import { NOT_PREPARED_VARIANT_DIGEST, invariantDigest, invariantOf } from "../protocol/digests";
import type { TransactionData } from "../protocol/types";
import { sameHex } from "../protocol/values";
import { TX_JOB, transferKey, txJobId } from "../queues/jobs";
import { readTxRecord } from "../coordination/in-flight";

/** What the receiving chain and the router's own send record say of a transfer's recorded receiving prepare. */
export type RevertedPrepareProof =
  /** Its transaction was mined reverted, `confirmations` deep, and the receiving side is not prepared: it is over. */
  | { readonly kind: "final"; readonly transactionHash: string; readonly blockNumber: number }
  /** Mined reverted, not yet `confirmations` deep: a re-org could still mine the same signed transaction. */
  | { readonly kind: "not-final"; readonly transactionHash: string; readonly depth: number; readonly required: number }
  /** Nothing proves the prepare can no longer take effect. */
  | { readonly kind: "none"; readonly detail: string };

export interface RevertedPrepareParams {
  readonly redis: Pick<Redis, "hget">;
  readonly prefix: string;
  /** The receiving chain: its TransactionManager and `confirmations`, and a read provider. */
  readonly receiving: {
    readonly transactionManager: string;
    readonly confirmations: number;
    readonly provider: Pick<ChainProvider, "getBlockNumber" | "getTransactionReceipt" | "call">;
  };
  readonly txData: TransactionData;
}

/**
 * Whether the transfer's receiving prepare was mined reverted for good, proven only from the prepare-receiver job's
 * own send record and the receiving chain, never from anything a requester or a job's data can set. The one proof
 * for every sender cancel that would replace a recorded "prepare": the submitter's cancel-sender job, and the admin
 * route before it enqueues one.
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
export async function proveReceivingPrepareReverted(params: RevertedPrepareParams): Promise<RevertedPrepareProof> {
  const { txData, receiving } = params;
  const chainId = txData.receivingChainId;
  const jobId = txJobId(TX_JOB.prepareReceiver, transferKey(txData.transactionId, txData.user));
  const record = await readTxRecord(params.redis, params.prefix, chainId, jobId);
  if (record?.status !== "reverted" || typeof record.revertedHash !== "string") {
    const status = record === undefined ? "absent" : String(record.status);
    return { kind: "none", detail: `the prepare-receiver record is ${status}, not reverted` };
  }
  const to = record.call?.to;
  if (typeof to !== "string" || !sameHex(to, receiving.transactionManager)) {
    return { kind: "none", detail: "the reverted prepare called the Router contract: its signature can be relayed" };
  }
  const { provider } = receiving;
  // The head first: the receipt is then read at a head at least as new, so its depth is never overstated.
  const head = await provider.getBlockNumber();
  const receipt = await provider.getTransactionReceipt(record.revertedHash);
  if (!receipt || receipt.status !== 0) {
    return { kind: "none", detail: `the receiving chain shows no reverted receipt for ${record.revertedHash}` };
  }
  const depth = head - receipt.blockNumber + 1;
  if (depth < receiving.confirmations) {
    return { kind: "not-final", transactionHash: receipt.hash, depth, required: receiving.confirmations };
  }
  const digest = invariantDigest(invariantOf(txData));
  const variant = await readVariantTransactionData(provider, receiving.transactionManager, digest, head);
  if (variant !== NOT_PREPARED_VARIANT_DIGEST) {
    return { kind: "none", detail: `the receiving side is prepared on chain at block ${head}` };
  }
  return { kind: "final", transactionHash: receipt.hash, blockNumber: receipt.blockNumber };
}

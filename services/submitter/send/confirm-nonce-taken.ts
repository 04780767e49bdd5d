import type { TransactionReceipt } from "ethers";
import { NonceTakenUnconfirmedError } from "./errors";
import type { SendContext } from "./send-context";
import type { TxRecord } from "./tx-record";

/** Independent providers that must each see the nonce used, with none of our receipts, before it counts as taken. */
export const NONCE_TAKEN_WITNESSES = 2;

/**
 * An unproven taken nonce is looked at again this much later: the job is parked, not failed (outcome-policy.ts), since
 * its transaction may be mined and only lag behind in the providers' receipts.
 */
export const NONCE_TAKEN_RETRY_MS = 15_000;

export type NonceTakenProof =
  /** One of the job's own transactions is mined at the nonce: nothing was taken. */
  | { readonly kind: "mined"; readonly receipt: TransactionReceipt }
  /** `witnesses` providers see the nonce used at a confirmed depth and none of our transactions mined. */
  | { readonly kind: "taken"; readonly witnesses: readonly string[] }
  | { readonly kind: "unconfirmed"; readonly witnesses: readonly string[]; readonly providers: number };

/**
 * Before a job that the contract does not protect against replays (remove-liquidity) builds a second
 * transaction because its nonce looks used by someone else: every provider is asked on its own for the
 * signer's transaction count at its newest block with `confirmations`, and for the receipts of every hash
 * the job ever sent. A receipt anywhere settles it the other way (our transaction is mined); otherwise at
 * least NONCE_TAKEN_WITNESSES providers must agree. One provider, or a load-balanced endpoint whose backends
 * disagree, can misreport a taken nonce; a rebuild would then withdraw twice.
 */
export async function confirmNonceTaken(ctx: SendContext, record: TxRecord): Promise<NonceTakenProof> {
  const hashes = [...new Set(record.attempts.map((a) => a.hash))];
  const looks = await ctx.provider.readEach(async (p) => {
    const head = await p.getBlockNumber();
    const count = await p.getTransactionCount(ctx.from, Math.max(0, head - ctx.chain.confirmations + 1));
    const receipts = await Promise.all(hashes.map((hash) => p.getTransactionReceipt(hash)));
    return { count, receipt: receipts.find((r): r is TransactionReceipt => r !== null) };
  }, "confirmNonceTaken");
  const mined = looks.find((look) => look.value?.receipt !== undefined)?.value?.receipt;
  if (mined) {
    return { kind: "mined", receipt: mined };
  }
  const witnesses = looks
    .filter((look) => look.value !== undefined && look.value.count > record.nonce)
    .map((look) => look.label);
  return witnesses.length >= NONCE_TAKEN_WITNESSES
    ? { kind: "taken", witnesses }
    : { kind: "unconfirmed", witnesses, providers: looks.length };
}

/** Logged at alert level: an operator must look whether the job's transaction was mined after all. */
export function nonceTakenUnconfirmed(
  ctx: SendContext,
  record: TxRecord,
  witnesses: readonly string[],
  providers: number,
): NonceTakenUnconfirmedError {
  const hashes = record.attempts.map((a) => a.hash);
  ctx.logger.error(
    "nonce looks taken by a transaction this job did not send, but that is not proven: nothing is rebuilt, the job is parked and looks again",
    {
      at: "submitter.send",
      alert: true,
      nonce: record.nonce,
      witnesses,
      providers,
      transactionHashes: hashes,
    },
  );
  return new NonceTakenUnconfirmedError(
    `nonce ${record.nonce} looks taken but only ${witnesses.length} of ${providers} providers confirm it and none has the job's receipt`,
    {
      chainId: ctx.chainId,
      nonce: record.nonce,
      transactionHashes: hashes,
      retryAtMs: Date.now() + NONCE_TAKEN_RETRY_MS,
    },
  );
}

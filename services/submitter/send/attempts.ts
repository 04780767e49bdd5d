import { keccak256 } from "ethers";
import { InsufficientFundsError, NonceTooLowError, toChainError } from "../../../shared/chain/errors";
import { errorCode, errorMessage } from "../../../shared/errors";
import { clampFee, feeToJson, type Fee } from "../../../shared/protocol/gas";
import type { UnsignedTransaction } from "../../../shared/signer/router-signer";
import { confirmNonceTaken, nonceTakenUnconfirmed } from "./confirm-nonce-taken";
import { NonceRetriesExhaustedError, SenderLeaseLostError, isStoppedBeforeSending } from "./errors";
import type { SendContext, SendJob } from "./send-context";
import { throwIfShuttingDown } from "./timing";
import { feeCeilingOf, type TxAttempt, type TxCall, type TxRecord } from "./tx-record";
import { routerMetrics } from "../../../shared/metrics/router-metrics";

/** A node that keeps answering "nonce too low" for fresh nonces means someone else is sending: stop and retry later. */
export const MAX_FRESH_NONCE_TRIES = 5;

/**
 * Signs the job's call at `nonce` with `fee` and saves it as the newest attempt. Nothing is broadcast here:
 * the record must hold a transaction before any node can, or a crash would forget it.
 */
export async function persistNewAttempt(
  ctx: SendContext,
  record: TxRecord,
  params: { nonce: number; fee: Fee; bumps: number },
): Promise<{ record: TxRecord; attempt: TxAttempt }> {
  await ctx.hooks?.at("before-persist", { jobId: record.jobId, nonce: params.nonce });
  const raw = await ctx.signer.signTransaction(unsignedTx(ctx.chainId, record.call, params.nonce, params.fee));
  const attempt: TxAttempt = {
    hash: keccak256(raw),
    raw,
    nonce: params.nonce,
    fee: feeToJson(params.fee),
    gasLimit: record.call.gasLimit,
    sentAtMs: Date.now(),
  };
  const saved = await ctx.records.save({
    ...record,
    nonce: params.nonce,
    bumps: params.bumps,
    // A new nonce is a new transaction: a halt caused by the old one's replacement does not carry over.
    bumpsHaltedBy: params.nonce === record.nonce ? record.bumpsHaltedBy : undefined,
    attempts: [...record.attempts, attempt],
  });
  return { record: saved, attempt };
}

/** Sends one persisted attempt; on success advances the stored nonce and reports the broadcast. */
export async function broadcastAttempt(ctx: SendContext, job: SendJob, attempt: TxAttempt): Promise<void> {
  // A holder paused past its lease (SIGSTOP, a long GC) must not send, even the persisted bytes. The time of the
  // check is logged: a pause can still fall between it and the send (then the same persisted bytes go out late,
  // never a second transaction), and a test can tell such a send from one decided after waking.
  // Unreplicated writes are as good as not made: a failover could forget this transaction and its nonce, and a
  // second, different one would follow (shared/coordination/replication.ts). Before the lease check: the wait can be long.
  await ctx.replicated?.();
  const leaseCheckedAtMs = Date.now();
  ctx.lease?.assertHeld();
  const result = await ctx.provider.broadcast(attempt.raw);
  await ctx.hooks?.at("after-broadcast", { jobId: job.jobId, nonce: attempt.nonce });
  await ctx.nonces.advanceTo(attempt.nonce + 1);
  job.trace.nonce = attempt.nonce;
  job.trace.transactionHash = attempt.hash;
  ctx.logger.info("transaction broadcast", {
    at: "submitter.send",
    transactionHash: attempt.hash,
    nonce: attempt.nonce,
    fee: attempt.fee,
    acceptedBy: result.acceptedBy,
    alreadyKnownBy: result.alreadyKnownBy,
    leaseCheckedAtMs,
  });
  try {
    await job.reportBroadcast(attempt.hash, attempt.nonce);
  } catch (err) {
    // The transaction is persisted and sent; a lost progress update only delays the admin's answer.
    ctx.logger.warn("could not report the broadcast", {
      at: "submitter.send",
      transactionHash: attempt.hash,
      error: errorMessage(err),
    });
  }
}

/** Saves the error on the record (operators read `lastError` to see why a job waits). */
export async function recordError(
  ctx: SendContext,
  record: TxRecord,
  err: unknown,
  extra: Partial<TxRecord> = {},
): Promise<TxRecord> {
  return ctx.records.save({
    ...record,
    ...extra,
    lastError: { code: errorCode(err), message: errorMessage(err).slice(0, 500), atMs: Date.now() },
  });
}

/**
 * A new transaction at a nonce nobody used yet: max(stored, chain pending). "Nonce too low" means the nonce
 * was taken after we read it; the transaction we signed can then never be mined, so it is rebuilt at the
 * next nonce (bounded). Any other broadcast error is thrown after it is recorded: the job retries, and the
 * next run rebroadcasts the persisted transaction instead of building another. A job the contract does not
 * protect against replays moves to the next nonce only once the nonce is proven taken by someone else
 * (confirm-nonce-taken.ts): a provider that timed out may have taken ours, and it may be mined already.
 */
export async function submitWithFreshNonce(ctx: SendContext, job: SendJob, record: TxRecord): Promise<TxRecord> {
  let atLeast = 0;
  let current = record;
  for (let tries = 1; tries <= MAX_FRESH_NONCE_TRIES; tries += 1) {
    throwIfShuttingDown(ctx.signal);
    const sent = await (ctx.sendSlot ?? runAlone)(async () => {
      const allocation = await ctx.nonces.allocate(atLeast);
      // The network's price, capped at the call's own ceiling (a relay's fee covers only so much).
      const fee = clampFee(await ctx.gasPrice(), feeCeilingOf(current.call, BigInt(ctx.chain.gasPriceMaximum)));
      const persisted = await persistNewAttempt(ctx, current, { nonce: allocation.nonce, fee, bumps: 0 });
      ctx.nonces.reserve(allocation.nonce);
      current = persisted.record;
      job.trace.bumps = 0;
      await ctx.hooks?.at("after-persist", { jobId: job.jobId, nonce: allocation.nonce });
      try {
        await broadcastAttempt(ctx, job, persisted.attempt);
        return { allocation };
      } catch (err) {
        return { allocation, err };
      }
    });
    const { allocation } = sent;
    if (!("err" in sent)) {
      routerMetrics().txSent.inc({ chain: String(ctx.chainId), operation: job.jobName });
      return current;
    }
    const { err } = sent;
    if (err instanceof SenderLeaseLostError) {
      throw err;
    }
    const chainError = toChainError(err);
    current = await recordError(ctx, current, chainError);
    if (chainError instanceof InsufficientFundsError) {
      ctx.logger.error(
        "the signer cannot pay for the transaction: top up its gas balance; the job is held and retried",
        {
          at: "submitter.send",
          alert: true,
          nonce: allocation.nonce,
          from: ctx.from,
          code: chainError.code,
        },
      );
    }
    if (!(chainError instanceof NonceTooLowError)) {
      throw chainError;
    }
    if (!job.replayProtected) {
      const proof = await confirmNonceTaken(ctx, current);
      if (proof.kind === "mined") {
        ctx.logger.warn("nonce reported used, and it is the job's own transaction: waiting for it", {
          at: "submitter.send",
          nonce: allocation.nonce,
          transactionHash: proof.receipt.hash,
        });
        return current;
      }
      if (proof.kind === "unconfirmed") {
        throw nonceTakenUnconfirmed(ctx, current, proof.witnesses, proof.providers);
      }
    }
    ctx.logger.warn("nonce already used on chain: rebuilding at the next nonce", {
      at: "submitter.send",
      nonce: allocation.nonce,
      stored: allocation.stored,
      pending: allocation.pending,
      tries,
    });
    atLeast = allocation.nonce + 1;
  }
  throw new NonceRetriesExhaustedError(`${MAX_FRESH_NONCE_TRIES} fresh nonces were all taken on chain ${ctx.chainId}`, {
    chainId: ctx.chainId,
    lastNonce: atLeast - 1,
  });
}

/**
 * Sends the newest attempt again: a node may have dropped it (restart, eviction). Refusals are expected
 * ("nonce too low" once it is mined) and left to the receipt checks, except the ones `rethrow` names.
 */
export async function rebroadcastLatest(
  ctx: SendContext,
  job: SendJob,
  record: TxRecord,
  rethrow: (err: Error) => boolean = () => false,
): Promise<void> {
  const latest = record.attempts[record.attempts.length - 1];
  if (!latest) {
    return;
  }
  try {
    await broadcastAttempt(ctx, job, latest);
  } catch (err) {
    // Unreplicated: nothing went out, and the job must not wait on a transaction no node has (resume path).
    if (isStoppedBeforeSending(err)) {
      throw err;
    }
    const chainError = toChainError(err);
    ctx.logger.info("rebroadcast refused", {
      at: "submitter.send",
      transactionHash: latest.hash,
      code: chainError.code,
    });
    if (rethrow(chainError)) {
      throw chainError;
    }
  }
}

const runAlone = <T>(fn: () => Promise<T>): Promise<T> => fn();

function unsignedTx(chainId: number, call: TxCall, nonce: number, fee: Fee): UnsignedTransaction {
  const common = {
    chainId,
    nonce,
    to: call.to,
    data: call.data,
    value: BigInt(call.value),
    gasLimit: BigInt(call.gasLimit),
  };
  return fee.type === 0
    ? { ...common, type: 0, gasPrice: fee.gasPrice }
    : { ...common, type: 2, maxFeePerGas: fee.maxFeePerGas, maxPriorityFeePerGas: fee.maxPriorityFeePerGas };
}

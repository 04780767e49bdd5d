import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { TX_JOB, transferKey, txJobId } from "../queues/jobs";
import { transferDecisionKey, txRecordKey } from "./keys";
import { transferRetentionSec } from "../protocol/retention";
import { readAhead } from "../timing";
import { defineScript, reply, type ScriptClient } from "../redis/script-runner";

/**
 * The two router actions of a transfer that must never both happen: preparing the receiving side (the user
 * can then be paid there) and cancelling the sending side (the user gets the amount back). Both at once
 * lose the receiving amount. Whichever claims the transfer's decision first wins; the other refuses.
 */
export type TransferDecision = "prepare" | "cancel-sender";

/** shared/redis/scripts/transfer-decision-claim.lua: the value found before ('' when none). */
const CLAIM = defineScript({
  file: "transfer-decision-claim",
  keys: ["decision"],
  args: ["decision", "replacing", "ttlSec"],
  decode: reply.string,
});

export type ClaimResult =
  | { readonly ok: true; readonly previous?: TransferDecision }
  | { readonly ok: false; readonly recorded: TransferDecision };

export interface DecisionParams {
  readonly redis: Pick<Redis, "get">;
  readonly prefix: string;
  readonly transactionId: string;
  readonly user: string;
}

/**
 * Records `decision` for the transfer in one atomic step, unless the other one is recorded. `replacing` names
 * the other decision when the caller has proven that it can no longer take effect (only then may it be
 * overwritten). Must run before the claimed action builds anything it could send. With `redis.minReplicas` the
 * submitter's broadcast waits until replicas hold this write (shared/coordination/replication.ts; same connection).
 */
export async function claimTransferDecision(
  params: DecisionParams & {
    readonly redis: ScriptClient;
    readonly decision: TransferDecision;
    readonly replacing?: TransferDecision;
    /**
     * Either side's expiry (unix seconds): the decision is kept until both sides expired, plus a day
     * (shared/protocol/retention.ts). It must outlive every job that could act on the transfer, and nothing
     * but a refund can happen to a transfer once both its sides expired.
     */
    readonly expirySec: number;
  },
): Promise<ClaimResult> {
  const key = transferDecisionKey(params.prefix, transferKey(params.transactionId, params.user));
  const ttlSec = transferRetentionSec(params.expirySec, Math.floor(Date.now() / 1000));
  const found = await CLAIM.run(params.redis, {
    keys: { decision: key },
    args: { decision: params.decision, replacing: params.replacing ?? "", ttlSec },
  });
  if (found === "" || found === params.decision) {
    return { ok: true, ...(found === "" ? {} : { previous: found }) };
  }
  if (found === params.replacing) {
    return { ok: true, previous: found };
  }
  return { ok: false, recorded: asDecision(found) };
}

export async function readTransferDecision(params: DecisionParams): Promise<TransferDecision | undefined> {
  const found = await params.redis.get(
    transferDecisionKey(params.prefix, transferKey(params.transactionId, params.user)),
  );
  return found === null ? undefined : asDecision(found);
}

function asDecision(value: string): TransferDecision {
  if (value === "prepare" || value === "cancel-sender") {
    return value;
  }
  // An unknown value was not written by us: treat it as the decision that refuses the most (a cancel).
  return "cancel-sender";
}

export interface SenderCancelIntentParams {
  /** The sending chain's transaction queue. */
  readonly queue: Pick<Queue, "getJobState">;
  readonly redis: Pick<Redis, "get" | "exists">;
  readonly prefix: string;
  readonly sendingChainId: number;
  readonly transactionId: string;
  readonly user: string;
}

/**
 * Why the sending side may be (or be about to be) refunded, or undefined. A receiving prepare is never sent
 * once any of these exists, in any state: a cancel-sender decision, a cancel-sender job under the transfer's
 * id (waiting, parked by the 780 s rule, active, even completed or failed: its transaction may be in a mempool
 * or in blocks a lagging provider does not show), or that job's transaction record.
 */
export async function findSenderCancelIntent(params: SenderCancelIntentParams): Promise<string | undefined> {
  const key = transferKey(params.transactionId, params.user);
  const jobId = txJobId(TX_JOB.cancelSender, key);
  // Three reads at once, judged in this order (one round trip instead of three).
  const decision = readAhead(params.redis.get(transferDecisionKey(params.prefix, key)));
  const jobState = readAhead(params.queue.getJobState(jobId));
  const recorded = readAhead(params.redis.exists(txRecordKey(params.prefix, params.sendingChainId, jobId)));
  if ((await decision) === "cancel-sender") {
    return "a sender cancel is the recorded decision for this transfer";
  }
  const state = await jobState;
  if (state !== "unknown") {
    return `the cancel-sender job ${jobId} on chain ${params.sendingChainId} exists (${state})`;
  }
  if ((await recorded) > 0) {
    return `the cancel-sender job ${jobId} on chain ${params.sendingChainId} has a transaction record`;
  }
  return undefined;
}

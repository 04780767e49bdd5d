import { txJobId, txJobOptions, type TxJobData, type TxJobName } from "../../../shared/queues";
import { waitForBroadcast } from "../../../shared/queues/wait-for-broadcast";
import type { OperationContext, TransactionResponse } from "../types";
import { claimOrJoin, type ContentClaim, type ContentClaimDeps } from "./content-claim";
import { DEFAULT_BROADCAST_TIMEOUT_MS, queueCall, type TxRequestDeps } from "./enqueue-and-wait";
import { assertSameJobData } from "./same-request";

/** One admin money request (a withdrawal or a deposit): its job, and what it checks before enqueuing it. */
export interface MoneyRequest {
  readonly kind: TxJobName;
  readonly chainId: number;
  /** The job's data, whose requestId is the request's. */
  readonly data: TxJobData;
  /** The request's fields that make two requests the same content (ContentClaim.fields). */
  readonly contentFields: ContentClaim["fields"];
  /** Checks that need no chain read and come before the claim (a pool asset); throw to refuse. */
  readonly precheck?: () => void;
  /** The chain reads before enqueuing (balance, approvals); throw to refuse. The claim is dropped then. */
  readonly check: () => Promise<void>;
  /** The log lines' `at`. */
  readonly at: string;
  /** What the broadcast's log line names besides its hash. */
  readonly logged: Readonly<Record<string, unknown>>;
}

/**
 * Runs a money request once, whatever retries it meets, under the job `<kind>-<requestId>`, and answers with its
 * transaction's hash once broadcast:
 * 1. the same request id finds the same job (same fields, or REQUEST_ID_CONFLICT) and waits on it;
 * 2. otherwise the prechecks, then the content claim: an identical request within the window answers this one
 *    (claimOrJoin), else the chain's checks pass and the claim reaches the replicas;
 * 3. the job is enqueued (unless joined) and the answer is its broadcast, never its confirmations.
 */
export async function moneyRequest(
  deps: ContentClaimDeps & TxRequestDeps,
  ctx: OperationContext,
  r: MoneyRequest,
): Promise<TransactionResponse> {
  const jobId = txJobId(r.kind, ctx.requestId);
  const claim: ContentClaim = { kind: r.kind, chainId: r.chainId, fields: r.contentFields, jobId };
  const queue = deps.queueFor(r.chainId);
  const logger = deps.logger.child({ requestId: ctx.requestId, jobId, chainId: r.chainId });
  // 1. The same request id: the same job.
  const existing = await queueCall(() => queue.getJob(jobId));
  let waitOn = jobId;
  if (existing) {
    assertSameJobData(existing, r.data, jobId, r.kind);
    logger.info(`${r.kind} retried: waiting on the existing job`, { at: r.at });
  } else {
    // 2. Prechecks, then the same content within the window, else the chain's checks and the claim.
    r.precheck?.();
    waitOn = (await claimOrJoin(deps, queue, claim, r.check, { logger, at: r.at })) ?? jobId;
  }
  // 3. Enqueue (unless joined) and answer once broadcast.
  const { transactionHash } = await waitForBroadcast({
    queue,
    events: deps.queueEventsFor(r.chainId),
    jobId: waitOn,
    timeoutMs: deps.broadcastTimeoutMs ?? DEFAULT_BROADCAST_TIMEOUT_MS,
    enqueue:
      existing || waitOn !== jobId
        ? undefined
        : () => queueCall(() => queue.add(r.kind, r.data, txJobOptions(r.kind, jobId))),
  });
  logger.info(`${r.kind} broadcast`, { at: r.at, transactionHash, ...r.logged });
  return { transactionHash };
}

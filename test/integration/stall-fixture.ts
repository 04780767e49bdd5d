import { randomBytes } from "node:crypto";
import type { Job } from "bullmq";
import { getAddress, hexlify } from "ethers";
import type { TxJobData, TxJobResult } from "../../shared/queues";
import type { LogCapture } from "../harness/logs";
import type { SubmitterStack, TxQueueClient } from "./submitter-fixture";

/**
 * What the submitter stall tests share (submitter-stall.test.ts, test/adversarial/stall-failover.test.ts): a
 * synchronous stall of the test process, which runs the sender in-process, and the checks that every job was sent
 * once, at contiguous nonces.
 */

/** Blocks the event loop for `ms`, as a long synchronous task (a GC pause, a CPU-bound burst) would. */
export function busyFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spin: nothing else in this process runs, the sender's renewals included
  }
}

/** The sender's stall at the shipped 1 s lease TTL: two and a half TTLs, so the key has expired in Redis. */
export const STALL_MS = 2_500;

/**
 * `count` withdrawals of `1` token unit, each to a recipient of its own: a withdrawal like one already on chain (same
 * amount and recipient) would be found there and complete without a transaction (operations/find-own-withdrawal.ts).
 */
export async function addJobs(
  s: SubmitterStack,
  q: TxQueueClient,
  count: number,
): Promise<Array<Job<TxJobData, TxJobResult>>> {
  const jobs: Array<Job<TxJobData, TxJobResult>> = [];
  for (let i = 0; i < count; i += 1) {
    jobs.push(
      await q.addRemoveLiquidity({
        assetId: s.chain.deployment.token,
        amount: "1",
        recipientAddress: getAddress(hexlify(randomBytes(20))),
      }),
    );
  }
  return jobs;
}

/** Jobs whose broadcast progress event has arrived. */
export function broadcastCount(q: TxQueueClient, jobs: ReadonlyArray<Job<TxJobData, TxJobResult>>): number {
  return jobs.filter((j) => (q.progress.get(j.id ?? "") ?? []).length > 0).length;
}

/**
 * Each job completed with the one transaction its record holds at its nonce, mined; the nonces are
 * `nonceBefore` … `nonceBefore + n - 1`, each once, and the signer's mined count is exactly that: nothing was sent
 * twice (a resumed job may send its persisted bytes again, never other ones) and no nonce was skipped.
 */
export async function expectEachSentOnce(
  s: SubmitterStack,
  q: TxQueueClient,
  jobs: ReadonlyArray<Job<TxJobData, TxJobResult>>,
  results: readonly TxJobResult[],
  nonceBefore: number,
): Promise<void> {
  const nonces: number[] = [];
  for (const [i, job] of jobs.entries()) {
    const record = await q.record(job.id ?? "");
    const hashes = [...new Set(record?.attempts.map((a) => a.hash) ?? [])];
    const receipts = await Promise.all(hashes.map((h) => s.chain.provider.getTransactionReceipt(h)));
    expect(receipts.filter((r) => r !== null).map((r) => r?.hash)).toEqual([results[i].transactionHash]);
    nonces.push(record?.nonce ?? -1);
  }
  expect([...nonces].sort((a, b) => a - b)).toEqual(jobs.map((_, i) => nonceBefore + i));
  await expect(s.chain.provider.getTransactionCount(s.signer, "latest")).resolves.toBe(nonceBefore + jobs.length);
}

/** The transaction hashes the process's log lines say it broadcast. */
export function broadcastHashes(lines: ReadonlyArray<Record<string, unknown>>): string[] {
  return lines.filter((l) => l.message === "transaction broadcast").map((l) => String(l.transactionHash));
}

/**
 * Every transaction the senders' log lines say they broadcast is some job's result: no second transaction. Not the
 * converse: a send that reached the node as the lease lapsed (or Redis died) fails its fenced nonce write before its
 * "transaction broadcast" line, and the job's next run finds it by its record and hash (seen in full runs).
 */
export function expectNoStrayBroadcast(
  lines: ReadonlyArray<Record<string, unknown>>,
  results: readonly TxJobResult[],
): void {
  const resultHashes = new Set(results.map((r) => r.transactionHash));
  expect(broadcastHashes(lines).filter((h) => !resultHashes.has(h))).toEqual([]);
}

/** The job outcome lines of a captured sender log with this outcome ("handover", …). */
export function outcomes(logs: LogCapture, outcome: string): Array<Record<string, unknown>> {
  return logs.find("submitter.job", "job outcome").filter((l) => l.outcome === outcome);
}

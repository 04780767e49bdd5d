import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import * as chainErrors from "../../shared/chain/errors";
import * as addLiquidityErrors from "../../shared/chain/add-liquidity";
import * as senderCancelErrors from "../../shared/chain/sender-cancel-errors";
import * as transferEventErrors from "../../shared/chain/transfer-events";
import { REVERT_REASONS } from "../../shared/chain/revert-codes";
import { RouterError } from "../../shared/errors";
import { CLAIM_RETRY_FIRST_DELAY_MS } from "../../shared/protocol/claim-retry";
import * as protocolErrors from "../../shared/protocol/errors";
import { TX_JOB } from "../../shared/queues/jobs";
import * as replicationErrors from "../../shared/coordination/replication";
import * as signerErrors from "../../shared/signer/errors";
import * as liquidityErrors from "../../services/submitter/liquidity-in-flight";
import * as addLiquidityForErrors from "../../services/submitter/operations/add-liquidity-for";
import * as lifecycleErrors from "../../services/submitter/operations/errors";
import { NotYetError, SenderVerificationError } from "../../services/submitter/operations/errors";
import * as relayCostErrors from "../../services/submitter/operations/relay-cost";
import * as relayErrors from "../../services/submitter/operations/relay-fulfill";
import {
  CLAIM_EXPIRY_SLACK_MS,
  MINED_RETRY_MS,
  decideOutcome,
  recordStatusMatters,
  type Outcome,
  type OutcomeFacts,
} from "../../services/submitter/outcome-policy";
import * as sendErrors from "../../services/submitter/send/errors";

/**
 * The submitter's error → outcome policy, one test per rule, and docs/submitter.md's table of errors and outcomes
 * checked row by row against decideOutcome: the doc cannot drift from the code, and every error class a job can
 * meet has a row.
 */

const NOW_MS = 1_800_000_000_000;
/** The `retryAtMs` every "not yet" error below carries. */
const RETRY_AT_MS = NOW_MS + 42_000;
const IN_THREE_DAYS_SEC = NOW_MS / 1000 + 3 * 86_400;

const ALL_JOBS: readonly string[] = Object.values(TX_JOB);

function facts(jobName: string, over: Partial<OutcomeFacts> = {}): OutcomeFacts {
  return {
    jobName,
    canMove: true,
    nowMs: NOW_MS,
    minedOk: false,
    recordConfirmed: false,
    attemptsMade: 0,
    attempts: 8,
    claim: jobName === TX_JOB.fulfillSender ? { expirySec: IN_THREE_DAYS_SEC, runs: 1 } : undefined,
    ...over,
  };
}

/** Every error class of the modules a submitter job runs through, by code, built with a "not yet" time. */
const ERROR_MODULES: readonly Record<string, unknown>[] = [
  chainErrors,
  addLiquidityErrors,
  senderCancelErrors,
  transferEventErrors,
  protocolErrors,
  replicationErrors,
  signerErrors,
  liquidityErrors,
  addLiquidityForErrors,
  lifecycleErrors,
  relayCostErrors,
  relayErrors,
  sendErrors,
];

type ErrorClass = new (message: string, context?: unknown, options?: unknown) => RouterError;

function errorRegistry(): Map<string, () => RouterError> {
  const registry = new Map<string, () => RouterError>();
  for (const module of ERROR_MODULES) {
    for (const value of Object.values(module)) {
      if (typeof value !== "function" || !(value.prototype instanceof RouterError)) continue;
      if (value === SenderVerificationError) continue;
      const Class = value as ErrorClass;
      const make = (): RouterError =>
        Class.prototype instanceof NotYetError
          ? new Class("test", RETRY_AT_MS)
          : new Class("test", { retryAtMs: RETRY_AT_MS });
      const code = make().code as string | undefined;
      if (code !== undefined) registry.set(code, make);
    }
  }
  for (const [revertCode, reason] of Object.entries(REVERT_REASONS)) {
    registry.set(reason, () => new chainErrors.TransactionRevertedError(`reverted #${revertCode}`, {}, { revertCode }));
  }
  // verifySenderPrepare's refusals: one code per reason; what follows depends on verify's cancellable verdict.
  registry.set(
    "SenderVerificationError (cancellable)",
    () => new SenderVerificationError({ reason: "bid-signer-mismatch", cancellable: true, detail: "test" }),
  );
  registry.set(
    "SenderVerificationError (not cancellable)",
    () => new SenderVerificationError({ reason: "not-our-transfer", cancellable: false, detail: "test" }),
  );
  return registry;
}

const REGISTRY = errorRegistry();

function make(code: string): RouterError {
  const build = REGISTRY.get(code);
  if (!build) throw new Error(`no error class with code ${code} in the submitter's modules`);
  return build();
}

describe("decideOutcome: one test per rule", () => {
  it("1. a shutdown or a lost sender lease hands the job back (no attempt used), whatever the job", () => {
    for (const jobName of ALL_JOBS) {
      expect(decideOutcome(make("SUBMITTER_SHUTDOWN"), facts(jobName))).toEqual({ kind: "hand-over" });
      expect(decideOutcome(make("SENDER_LEASE_LOST"), facts(jobName, { minedOk: true }))).toEqual({
        kind: "hand-over",
      });
    }
  });

  it("2. a not-yet error parks the job until its retryAtMs; one without a finite time is retried", () => {
    for (const code of ["SENDER_TOO_NEW", "LIQUIDITY_IN_FLIGHT", "NONCE_TAKEN_UNCONFIRMED", "REDIS_NOT_REPLICATED"]) {
      expect(decideOutcome(make(code), facts(TX_JOB.removeLiquidity))).toEqual({
        kind: "park",
        reason: "not-yet",
        untilMs: RETRY_AT_MS,
      });
    }
    const timeless = new senderCancelErrors.SenderTooNewError("admin's copy, no retryAtMs");
    expect(decideOutcome(timeless, facts(TX_JOB.cancelSender))).toEqual({ kind: "retry", lastAttempt: false });
  });

  it("2. a ledger naming Redis refused parks a claim until retryAtMs, before the claim's park archives its record", () => {
    expect(decideOutcome(make("LEDGER_NAMING_FAILED"), facts(TX_JOB.fulfillSender))).toEqual({
      kind: "park",
      reason: "not-yet",
      untilMs: RETRY_AT_MS,
    });
  });

  it("2. the replica wait's park is REPLICA_RETRY_MS from when the error was made", () => {
    const before = Date.now();
    const err = new replicationErrors.ReplicaAckTimeoutError("0 of 1 replicas");
    expect(err.notYet).toBe(true);
    expect(err.context.retryAtMs).toBeGreaterThanOrEqual(before + replicationErrors.REPLICA_RETRY_MS);
    expect(err.context.retryAtMs).toBeLessThanOrEqual(Date.now() + replicationErrors.REPLICA_RETRY_MS);
  });

  it("3. a failed claim is parked with a doubling delay and its reverted record archived, until the expiry", () => {
    const reverted = new chainErrors.TransactionRevertedError("mined with status 0");
    expect(decideOutcome(reverted, facts(TX_JOB.fulfillSender))).toEqual({
      kind: "park",
      reason: "claim",
      untilMs: NOW_MS + CLAIM_RETRY_FIRST_DELAY_MS,
      archiveReverted: true,
      secondsToExpiry: 3 * 86_400,
      logLevel: "warn",
    });
    const third = decideOutcome(
      make("RPC_UNAVAILABLE"),
      facts(TX_JOB.fulfillSender, { claim: { expirySec: NOW_MS / 1000 + 3600, runs: 3 } }),
    );
    expect(third).toMatchObject({ kind: "park", untilMs: NOW_MS + 4 * CLAIM_RETRY_FIRST_DELAY_MS, logLevel: "alert" });
  });

  it("3. a claim past its expiry plus slack, or failing for a terminal reason, is not parked", () => {
    const expired = { claim: { expirySec: (NOW_MS - CLAIM_EXPIRY_SLACK_MS) / 1000, runs: 9 } };
    expect(decideOutcome(make("RPC_UNAVAILABLE"), facts(TX_JOB.fulfillSender, expired))).toEqual({
      kind: "retry",
      lastAttempt: false,
    });
    expect(decideOutcome(make("SENDER_EXPIRED"), facts(TX_JOB.fulfillSender))).toEqual({
      kind: "fail",
      refund: false,
    });
  });

  it("4. an error after the job's transaction was mined parks it 1 s; a revert is not mined", () => {
    expect(decideOutcome(make("TX_RECORD_CONFLICT"), facts(TX_JOB.removeLiquidity, { minedOk: true }))).toEqual({
      kind: "park",
      reason: "mined",
      untilMs: NOW_MS + MINED_RETRY_MS,
    });
    // A terminal error too, once this run saw the transaction mined with status 1.
    expect(decideOutcome(make("TX_RECORD_MISMATCH"), facts(TX_JOB.prepareReceiver, { minedOk: true }))).toMatchObject({
      kind: "park",
      reason: "mined",
    });
    // The record says confirmed: only a retriable error parks.
    expect(decideOutcome(make("RPC_UNAVAILABLE"), facts(TX_JOB.cancelSender, { recordConfirmed: true }))).toMatchObject(
      {
        kind: "park",
        reason: "mined",
      },
    );
    expect(decideOutcome(make("TX_RECORD_MISMATCH"), facts(TX_JOB.cancelSender, { recordConfirmed: true }))).toEqual({
      kind: "fail",
      refund: false,
    });
    const reverted = new chainErrors.TransactionRevertedError("mined with status 0");
    expect(decideOutcome(reverted, facts(TX_JOB.cancelReceiver, { minedOk: true }))).toEqual({
      kind: "fail",
      refund: false,
    });
  });

  it("4. the record is read only when its status changes the answer", () => {
    const { recordConfirmed: _ignored, ...f } = facts(TX_JOB.removeLiquidity);
    expect(recordStatusMatters(make("RPC_UNAVAILABLE"), f)).toBe(true);
    expect(recordStatusMatters(make("TX_RECORD_MISMATCH"), f)).toBe(false);
    expect(recordStatusMatters(make("SUBMITTER_SHUTDOWN"), f)).toBe(false);
    expect(recordStatusMatters(make("LIQUIDITY_IN_FLIGHT"), f)).toBe(false);
    expect(recordStatusMatters(make("RPC_UNAVAILABLE"), { ...f, minedOk: true })).toBe(false);
    expect(recordStatusMatters(make("RPC_UNAVAILABLE"), { ...f, canMove: false })).toBe(false);
  });

  it("5. a retriable error is retried with BullMQ's backoff; the last attempt says so", () => {
    expect(decideOutcome(make("RPC_UNAVAILABLE"), facts(TX_JOB.prepareReceiver))).toEqual({
      kind: "retry",
      lastAttempt: false,
    });
    expect(decideOutcome(make("RPC_UNAVAILABLE"), facts(TX_JOB.prepareReceiver, { attemptsMade: 7 }))).toEqual({
      kind: "retry",
      lastAttempt: true,
    });
    // Without the lock (or after BullMQ refused a move) nothing is moved: shutdown and not-yet are retried.
    for (const code of ["SUBMITTER_SHUTDOWN", "LIQUIDITY_IN_FLIGHT"]) {
      expect(decideOutcome(make(code), facts(TX_JOB.prepareReceiver, { canMove: false }))).toEqual({
        kind: "retry",
        lastAttempt: false,
      });
    }
  });

  it("6. a terminal error fails the job; a receiving prepare refused for a cancellable reason refunds the sender", () => {
    expect(decideOutcome(make("NOT_ENOUGH_LIQUIDITY"), facts(TX_JOB.prepareReceiver))).toEqual({
      kind: "fail",
      refund: true,
    });
    expect(decideOutcome(make("SenderVerificationError (cancellable)"), facts(TX_JOB.prepareReceiver))).toEqual({
      kind: "fail",
      refund: true,
    });
    // Cancellable, but not a receiving prepare: nothing to refund.
    expect(decideOutcome(make("NOT_ENOUGH_LIQUIDITY"), facts(TX_JOB.relayFulfill))).toEqual({
      kind: "fail",
      refund: false,
    });
  });

  it("6. a receiving prepare whose transaction reverted refunds the sender; a revert with a known reason does not", () => {
    const minedReverted = new chainErrors.TransactionRevertedError("mined with status 0");
    for (const over of [{}, { minedOk: true }, { canMove: false }]) {
      expect(decideOutcome(minedReverted, facts(TX_JOB.prepareReceiver, over))).toEqual({ kind: "fail", refund: true });
    }
    // The same error in any other job: nothing of the user's to refund from there.
    expect(decideOutcome(minedReverted, facts(TX_JOB.cancelSender))).toEqual({ kind: "fail", refund: false });
    // A revert at estimation with its reason decoded (#P:016): the reason's code, failed, no refund from here.
    const named = new chainErrors.TransactionRevertedError("reverted #P:016", {}, { revertCode: "P:016" });
    expect(decideOutcome(named, facts(TX_JOB.prepareReceiver))).toEqual({ kind: "fail", refund: false });
  });
});

/** How docs/submitter.md words an outcome. */
function describeOutcome(outcome: Outcome): string {
  switch (outcome.kind) {
    case "hand-over":
      return "hand back to the queue";
    case "park":
      if (outcome.reason === "not-yet") {
        return outcome.untilMs === RETRY_AT_MS ? "park until `retryAtMs`" : `park until ${outcome.untilMs}`;
      }
      return outcome.reason === "claim" ? "park, doubling delay, until the expiry" : "park 1 s";
    case "retry":
      return outcome.lastAttempt ? "retry; the last attempt fails" : "retry (backoff)";
    case "fail":
      return outcome.refund ? "fail + refund the sender" : "fail";
  }
}

/** The table's "When" column: the run's facts beside the default (lock held, nothing mined, attempts left). */
const WHEN: Readonly<Record<string, Partial<OutcomeFacts>>> = {
  "": {},
  "lock lost": { canMove: false },
  "mined in this run": { minedOk: true },
  "record confirmed": { recordConfirmed: true },
  "last attempt": { attemptsMade: 7 },
  "past the expiry": { claim: { expirySec: (NOW_MS - CLAIM_EXPIRY_SLACK_MS) / 1000, runs: 9 } },
};

interface Row {
  readonly codes: readonly string[];
  readonly jobs: readonly string[];
  readonly when: string;
  readonly outcome: string;
  readonly line: string;
}

const TABLE_START = "<!-- outcome-table: checked by test/unit/outcome-policy.test.ts -->";

function tableRows(): Row[] {
  const doc = readFileSync(resolve(__dirname, "../../docs/submitter.md"), "utf8");
  const start = doc.indexOf(TABLE_START);
  expect(start).toBeGreaterThanOrEqual(0);
  const lines = doc
    .slice(start + TABLE_START.length)
    .trimStart()
    .split("\n");
  const end = lines.findIndex((l) => !l.startsWith("|"));
  const body = lines.slice(2, end);
  const rows: Row[] = [];
  const listedFor = new Map<string, Set<string>>(); // job → codes with their own row
  const parsed = body.map((line) => {
    const cells = line
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim());
    expect(cells).toHaveLength(5);
    const [codesCell, jobsCell, when, outcome] = cells;
    const jobs =
      jobsCell === "any"
        ? ALL_JOBS
        : jobsCell.startsWith("any but ")
          ? ALL_JOBS.filter((j) => !jobsCell.slice(8).split(", ").map(unquote).includes(j))
          : jobsCell.split(", ").map(unquote);
    const codes = codesCell === "every other code" ? [] : codesCell.split(", ").map(unquote);
    for (const job of jobs) {
      for (const code of codes) {
        const key = `${job} ${when}`;
        listedFor.set(key, new Set([...(listedFor.get(key) ?? []), code]));
      }
    }
    return { codesCell, codes, jobs, when, outcome, line };
  });
  for (const r of parsed) {
    const codes =
      r.codesCell === "every other code"
        ? [...REGISTRY.keys()].filter((c) => r.jobs.every((j) => !listedFor.get(`${j} ${r.when}`)?.has(c)))
        : r.codes;
    rows.push({ codes, jobs: r.jobs, when: r.when, outcome: r.outcome, line: r.line });
  }
  return rows;
}

function unquote(cell: string): string {
  return cell.replace(/^`|`$/g, "");
}

describe("docs/submitter.md's table of errors and outcomes", () => {
  let rows: Row[] = [];
  beforeAll(() => {
    rows = tableRows();
  });

  it("states decideOutcome's answer on every row", () => {
    const wrong: string[] = [];
    for (const row of rows) {
      const over = WHEN[row.when];
      if (over === undefined) {
        wrong.push(`${row.line}: unknown "When" ${JSON.stringify(row.when)} (one of ${Object.keys(WHEN).join(", ")})`);
        continue;
      }
      for (const code of row.codes) {
        for (const job of row.jobs) {
          const said = describeOutcome(decideOutcome(make(code), facts(job, over)));
          if (said !== row.outcome)
            wrong.push(`${code} in ${job} (${row.when || "-"}): the doc says "${row.outcome}", the policy "${said}"`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("has a row for every error code of the submitter's modules and every revert reason, for every job", () => {
    const missing: string[] = [];
    for (const code of REGISTRY.keys()) {
      for (const job of ALL_JOBS) {
        if (!rows.some((r) => r.when === "" && r.codes.includes(code) && r.jobs.includes(job))) {
          missing.push(`${code} in ${job}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

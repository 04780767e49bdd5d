import { MAX_CANCEL_READ_AGE_MS, cancelMayUseBatchReads } from "../../shared/protocol/decision-reads";

describe("cancelMayUseBatchReads: a cancel relies on its batch's reads only while they are fresh and young", () => {
  const READ_AT = 1_700_000_000_000;

  it("uses an agreeing reconcile up to the bound, and reads again past it", () => {
    const reads = { fresh: true, readAtMs: READ_AT };
    expect(cancelMayUseBatchReads(reads, READ_AT)).toBe(true);
    expect(cancelMayUseBatchReads(reads, READ_AT + MAX_CANCEL_READ_AGE_MS)).toBe(true);
    expect(cancelMayUseBatchReads(reads, READ_AT + MAX_CANCEL_READ_AGE_MS + 1)).toBe(false);
  });

  it("the last of a batch of eight decided after seven slow decisions reads again", () => {
    const slowDecisionMs = 200; // each earlier decision re-read both chains over a slow RPC
    const reads = { fresh: true, readAtMs: READ_AT };
    expect(cancelMayUseBatchReads(reads, READ_AT + 7 * slowDecisionMs)).toBe(false);
    expect(cancelMayUseBatchReads(reads, READ_AT + 7 * 5)).toBe(true); // seven Redis-only decisions
  });

  it("never uses reads that did not agree with the chains, however young", () => {
    expect(cancelMayUseBatchReads({ fresh: false, readAtMs: READ_AT }, READ_AT)).toBe(false);
  });

  it("reads again when the clock went backwards (the age is unknown)", () => {
    expect(cancelMayUseBatchReads({ fresh: true, readAtMs: READ_AT }, READ_AT - 1)).toBe(false);
  });

  it("takes the bound as a parameter; the shipped one is the default poll interval", () => {
    expect(MAX_CANCEL_READ_AGE_MS).toBe(1_000);
    expect(cancelMayUseBatchReads({ fresh: true, readAtMs: READ_AT }, READ_AT + 50, 10)).toBe(false);
  });
});

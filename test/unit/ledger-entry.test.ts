import { ledgerEntryOf } from "../../services/submitter/job/send-job-of";
import { TX_JOB, type TxJobData } from "../../shared/queues";
import { LEDGER_TX_KINDS } from "../../shared/queues/ledger-jobs";

/** The kind, swap and request each job's mined transaction is named with (the integration tests send most of them). */
describe("ledgerEntryOf", () => {
  const id = "0xABCDEF0000000000000000000000000000000000000000000000000000000001";
  const txData = { transactionId: id } as unknown as TxJobData;

  it.each([
    [TX_JOB.prepareReceiver, { sender: { txData: { transactionId: id } } }, "prepare"],
    [TX_JOB.fulfillSender, { txData: { transactionId: id } }, "fulfill"],
    [TX_JOB.cancelSender, { txData: { transactionId: id }, requestId: "req-1" }, "cancel"],
    [TX_JOB.cancelReceiver, { txData: { transactionId: id } }, "cancel"],
    [TX_JOB.relayFulfill, { txData: { transactionId: id } }, "relay"],
  ])("%s: kind %s with the transfer's id in lower case", (name, data, kind) => {
    const entry = ledgerEntryOf(name, data as unknown as TxJobData);
    expect(entry).toMatchObject({ kind, transactionId: id.toLowerCase() });
    expect(LEDGER_TX_KINDS).toContain(entry?.kind);
  });

  it("an admin operation carries its request id and no transfer", () => {
    expect(ledgerEntryOf(TX_JOB.removeLiquidity, { requestId: "r-2" } as unknown as TxJobData)).toEqual({
      kind: "remove-liquidity",
      requestId: "r-2",
    });
    expect(ledgerEntryOf(TX_JOB.addLiquidityFor, { requestId: "r-3" } as unknown as TxJobData)).toEqual({
      kind: "add-liquidity",
      requestId: "r-3",
    });
  });

  it("every job name has a kind; an unknown name has none (nothing is named for it)", () => {
    for (const name of Object.values(TX_JOB)) {
      expect(ledgerEntryOf(name, txData)?.kind).toBeDefined();
    }
    expect(ledgerEntryOf("not-a-job", txData)).toBeUndefined();
  });
});

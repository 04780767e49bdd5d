import { getAddress } from "ethers";
import { TM_TOPICS, decodeTmLog, decodeTmLogs, type RawTmLog } from "../../shared/chain/tm-log-decoder";
import { HASH, ROUTER, TOKEN, TX_DATA, USER, preparedLog, rawLog } from "./tm-log-fixtures";

describe("TransactionManager log decoder", () => {
  it("decodes a prepare with its txData, PrepareArgs and caller, and a liquidity change", () => {
    expect(decodeTmLog(preparedLog())).toMatchObject({
      kind: "prepared",
      blockNumber: 42,
      transactionHash: HASH,
      logIndex: 3,
      caller: getAddress(USER),
      txData: { ...TX_DATA, user: getAddress(USER) },
      encryptedCallData: "0xabcd",
    });
    expect(decodeTmLog(rawLog("LiquidityAdded", [ROUTER, TOKEN, 5n, USER], 7))).toEqual({
      kind: "liquidityAdded",
      blockNumber: 7,
      transactionHash: HASH,
      logIndex: 3,
      router: getAddress(ROUTER),
      assetId: getAddress(TOKEN),
      amount: "5",
      counterparty: getAddress(USER),
    });
  });

  it("returns undefined for events the router does not read", () => {
    expect(decodeTmLog(rawLog("RouterAdded", [ROUTER, USER]))).toBeUndefined();
    expect(decodeTmLog({ ...preparedLog(), topics: ["0x" + "ee".repeat(32)] })).toBeUndefined();
  });

  // The rule (docs/decisions.md): never throw on a log with one of our topics; say where it is, so the caller
  // can report it once and skip it.
  it("returns a typed undecodable result, with the log's position, for a log of ours whose data does not decode", () => {
    const truncated: RawTmLog = { ...preparedLog(), data: preparedLog().data.slice(0, 200) };
    expect(decodeTmLog(truncated)).toEqual({
      kind: "undecodable",
      blockNumber: 42,
      transactionHash: HASH,
      logIndex: 3,
      topic: TM_TOPICS.prepared,
      reason: expect.stringMatching(/\S/) as unknown as string,
    });
  });

  it("treats a value the router's types cannot hold (an expiry beyond 2^53) as undecodable too", () => {
    const log = preparedLog({ ...TX_DATA, expiry: (2n ** 60n) as unknown as number }); // the ABI coder takes a bigint
    expect(decodeTmLog(log)).toMatchObject({
      kind: "undecodable",
      logIndex: 3,
      reason: expect.stringContaining("expiry"),
    });
  });

  it("splits a batch into events in chain order and the undecodable logs, dropping other events", () => {
    const later = preparedLog(TX_DATA, 50);
    const earlier = { ...preparedLog(TX_DATA, 40), index: 9 };
    const broken = { ...preparedLog(TX_DATA, 45), data: "0x" };
    const other = rawLog("RouterAdded", [ROUTER, USER]);
    const { events, undecodable } = decodeTmLogs([later, broken, other, earlier]);
    expect(events.map((e) => [e.blockNumber, e.logIndex])).toEqual([
      [40, 9],
      [50, 3],
    ]);
    expect(undecodable).toEqual([expect.objectContaining({ kind: "undecodable", blockNumber: 45, logIndex: 3 })]);
  });
});

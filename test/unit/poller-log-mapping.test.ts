import { getAddress, zeroPadValue } from "ethers";
import {
  TM_TOPICS,
  decodeTmLog,
  type CancelledEvent,
  type FulfilledEvent,
  type LiquidityChangeEvent,
  type PreparedEvent,
} from "../../shared/chain/tm-log-decoder";
import { completedRecord, liquidityEventOf, preparedRecord } from "../../services/poller/sources/log-mapping";
import { routerLogFilters } from "../../shared/chain/router-logs";
import { HASH, ROUTER, TOKEN, TX_DATA, TX_ID, USER, preparedLog, rawLog } from "./tm-log-fixtures";

describe("poller log mapping", () => {
  it("filters on the router as topic 2 of Transaction* events and topic 1 of Liquidity* events", () => {
    const filters = routerLogFilters(ROUTER.toLowerCase());
    const routerTopic = zeroPadValue(ROUTER, 32).toLowerCase();
    expect(filters.transfers).toEqual([
      [TM_TOPICS.prepared, TM_TOPICS.fulfilled, TM_TOPICS.cancelled],
      null,
      routerTopic,
    ]);
    expect(filters.liquidity).toEqual([[TM_TOPICS.liquidityAdded, TM_TOPICS.liquidityRemoved], routerTopic]);
    expect(preparedLog().topics[2]).toBe(routerTopic);
    expect(rawLog("LiquidityAdded", [ROUTER, TOKEN, 5n, USER]).topics[1]).toBe(routerTopic);
    expect(TM_TOPICS.prepared).toBe("0x88fbf1dbc326c404155bad4643bd0ddadd23f0636929c66442f0433208b2c905");
  });

  it("maps a TransactionPrepared log to a Prepared record with the event's txData and PrepareArgs", () => {
    const event = decodeTmLog(preparedLog());
    expect(event?.kind).toBe("prepared");
    const record = preparedRecord(1337, event as PreparedEvent, 1_700_000_123);
    expect(record).toEqual({
      status: "Prepared",
      chainId: 1337,
      txData: { ...TX_DATA, user: getAddress(USER), router: getAddress(ROUTER), transactionId: TX_ID },
      encryptedCallData: "0xabcd",
      encodedBid: "0x0102",
      bidSignature: "0x0304",
      prepareTransactionHash: HASH,
      preparedTimestamp: 1_700_000_123,
    });
  });

  it("maps TransactionFulfilled with the FulfillArgs' signature, relayer fee and call data, keeping given prepare fields", () => {
    const log = rawLog(
      "TransactionFulfilled",
      [
        USER,
        ROUTER,
        TX_ID,
        { txData: TX_DATA, relayerFee: 7n, signature: "0xAA", callData: "0xBB", encodedMeta: "0x" },
        true,
        false,
        "0x",
        USER,
      ],
      50,
    );
    const event = decodeTmLog(log) as FulfilledEvent;
    const prepare = {
      encryptedCallData: "0x",
      encodedBid: "0x01",
      bidSignature: "0x02",
      prepareTransactionHash: HASH,
      preparedTimestamp: 5,
    };
    expect(completedRecord(1338, event, 99, prepare)).toEqual({
      status: "Fulfilled",
      chainId: 1338,
      txData: TX_DATA,
      ...prepare,
      signature: "0xaa",
      relayerFee: "7",
      callData: "0xbb",
      fulfillTransactionHash: HASH,
      fulfillBlockNumber: 50,
      fulfillTimestamp: 99,
    });
  });

  it("maps TransactionCancelled with unknown prepare fields as empty strings (the store keeps its own)", () => {
    const log = rawLog(
      "TransactionCancelled",
      [USER, ROUTER, TX_ID, { txData: TX_DATA, signature: "0x", encodedMeta: "0x" }, USER],
      60,
    );
    const event = decodeTmLog(log) as CancelledEvent;
    expect(completedRecord(1337, event, 77)).toEqual({
      status: "Cancelled",
      chainId: 1337,
      txData: TX_DATA,
      encryptedCallData: "",
      encodedBid: "",
      bidSignature: "",
      prepareTransactionHash: "",
      cancelTransactionHash: HASH,
      cancelBlockNumber: 60,
      cancelTimestamp: 77,
    });
  });

  it("maps liquidity events to the sink's shape", () => {
    const event = decodeTmLog(rawLog("LiquidityRemoved", [ROUTER, TOKEN, 12n, USER], 9)) as LiquidityChangeEvent;
    expect(liquidityEventOf(event)).toEqual({
      kind: "removed",
      assetId: getAddress(TOKEN),
      amount: "12",
      blockNumber: 9,
      transactionHash: HASH,
    });
  });
});

import { ZeroAddress, getAddress, keccak256, zeroPadValue } from "ethers";
import { contractInterface } from "../../shared/chain/contracts";
import type { TransactionData } from "../../shared/protocol/types";
import {
  TM_TOPICS,
  completedRecord,
  decodeTmLog,
  preparedRecord,
  routerLogFilters,
  type DecodedTmEvent,
  type RawLog,
} from "../../services/poller/sources/log-mapping";

const tm = contractInterface("TransactionManager");
const USER = "0x1111111111111111111111111111111111111111";
const ROUTER = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
const TOKEN = "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d";
const TX_ID = "0x" + "ab".repeat(32);
const HASH = "0x" + "cd".repeat(32);

const TX_DATA: TransactionData = {
  receivingChainTxManagerAddress: "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113",
  user: USER,
  router: ROUTER,
  initiator: USER,
  sendingAssetId: TOKEN,
  receivingAssetId: "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174",
  sendingChainFallback: USER,
  callTo: ZeroAddress,
  receivingAddress: USER,
  sendingChainId: 1337,
  receivingChainId: 1338,
  callDataHash: keccak256("0x"),
  transactionId: TX_ID,
  amount: "1000000000000000000",
  expiry: 1_700_300_000,
  preparedBlockNumber: 42,
};

function rawLog(name: string, values: unknown[], blockNumber = 42): RawLog {
  const event = tm.getEvent(name);
  if (!event) throw new Error(name);
  const { data, topics } = tm.encodeEventLog(event, values);
  return { data, topics, blockNumber, transactionHash: HASH.toUpperCase().replace("0X", "0x"), index: 3 };
}

function preparedLog(): RawLog {
  const invariant = { ...TX_DATA };
  return rawLog("TransactionPrepared", [
    USER,
    ROUTER,
    TX_ID,
    TX_DATA,
    USER,
    {
      invariantData: invariant,
      amount: TX_DATA.amount,
      expiry: TX_DATA.expiry,
      encryptedCallData: "0xABCD",
      encodedBid: "0x0102",
      bidSignature: "0x0304",
      encodedMeta: "0x",
    },
  ]);
}

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
    const record = preparedRecord(1337, event as Extract<DecodedTmEvent, { kind: "prepared" }>, 1_700_000_123);
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
    const event = decodeTmLog(log) as Extract<DecodedTmEvent, { kind: "fulfilled" }>;
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
    const event = decodeTmLog(log) as Extract<DecodedTmEvent, { kind: "cancelled" }>;
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

  it("decodes liquidity events and ignores events the router does not use", () => {
    expect(decodeTmLog(rawLog("LiquidityRemoved", [ROUTER, TOKEN, 12n, USER], 9))).toEqual({
      kind: "liquidity",
      meta: { blockNumber: 9, transactionHash: HASH, logIndex: 3 },
      router: getAddress(ROUTER),
      event: { kind: "removed", assetId: getAddress(TOKEN), amount: "12", blockNumber: 9, transactionHash: HASH },
    });
    expect(decodeTmLog(rawLog("RouterAdded", [ROUTER, USER]))).toBeUndefined();
  });
});

import { ZeroAddress, keccak256 } from "ethers";
import type { TransferRecord } from "../../shared/protocol/types";
import { mergeTransferRecord } from "../../shared/transfers/transfer-store";
import { exhaustedByRetriableErrors } from "../../services/poller/plan-executor";
import type { RouterConfig } from "../../shared/config/types";
import { checkPollerEnv, readPollerEnv } from "../../services/poller/env";
import { ProcessEnvError } from "../../shared/process/process-env";

const USER = "0x1111111111111111111111111111111111111111";
const PREPARED: TransferRecord = {
  status: "Prepared",
  chainId: 1337,
  txData: {
    receivingChainTxManagerAddress: USER,
    user: USER,
    router: USER,
    initiator: USER,
    sendingAssetId: ZeroAddress,
    receivingAssetId: ZeroAddress,
    sendingChainFallback: USER,
    callTo: ZeroAddress,
    receivingAddress: USER,
    sendingChainId: 1337,
    receivingChainId: 1338,
    callDataHash: keccak256("0x"),
    transactionId: "0x" + "ab".repeat(32),
    amount: "10",
    expiry: 100,
    preparedBlockNumber: 5,
  },
  encryptedCallData: "0x",
  encodedBid: "0x01",
  bidSignature: "0x02",
  prepareTransactionHash: "0x" + "cd".repeat(32),
  preparedTimestamp: 50,
};
const FULFILLED_WITHOUT_PREPARE: TransferRecord = {
  ...PREPARED,
  encryptedCallData: "",
  encodedBid: "",
  bidSignature: "",
  prepareTransactionHash: "",
  preparedTimestamp: undefined,
  status: "Fulfilled",
  signature: "0x03",
  relayerFee: "0",
  callData: "0x",
  fulfillTransactionHash: "0x" + "ef".repeat(32),
  fulfillBlockNumber: 9,
};
const CANCELLED: TransferRecord = { ...PREPARED, status: "Cancelled", cancelTransactionHash: "0x" + "12".repeat(32) };

describe("transfer store merge rules", () => {
  it("moves a status forward and keeps the prepare fields the completion did not carry", () => {
    expect(mergeTransferRecord(PREPARED, FULFILLED_WITHOUT_PREPARE)).toEqual({
      ...PREPARED,
      status: "Fulfilled",
      signature: "0x03",
      relayerFee: "0",
      callData: "0x",
      fulfillTransactionHash: "0x" + "ef".repeat(32),
      fulfillBlockNumber: 9,
    });
  });

  it("never moves a status back, and keeps the first of two settled statuses", () => {
    expect(mergeTransferRecord(FULFILLED_WITHOUT_PREPARE, PREPARED)).toBe("stale");
    expect(mergeTransferRecord(CANCELLED, FULFILLED_WITHOUT_PREPARE)).toBe("stale");
  });

  it("keeps the first transfer when another one (another invariant) arrives under the same id and user", () => {
    const decoy: TransferRecord = {
      ...PREPARED,
      txData: { ...PREPARED.txData, sendingChainFallback: "0x2222222222222222222222222222222222222222", amount: "1" },
    };
    expect(mergeTransferRecord(PREPARED, decoy)).toBe("conflict");
    expect(mergeTransferRecord(PREPARED, { ...FULFILLED_WITHOUT_PREPARE, txData: decoy.txData })).toBe("conflict");
  });

  it("stores the first observation as it is, and re-observing the same record changes nothing", () => {
    expect(mergeTransferRecord(undefined, PREPARED)).toBe(PREPARED);
    expect(JSON.stringify(mergeTransferRecord(PREPARED, { ...PREPARED }))).toBe(JSON.stringify(PREPARED));
  });
});

describe("failed job classification", () => {
  const job = (attemptsMade: number, trace: string[]) => ({ attemptsMade, opts: { attempts: 8 }, stacktrace: trace });
  it("retries only jobs whose attempts ran out on retriable errors", () => {
    expect(exhaustedByRetriableErrors(job(8, ["Error: RPC_UNAVAILABLE\n    at x"]))).toBe(true);
    expect(exhaustedByRetriableErrors(job(3, ["UnrecoverableError: INVALID\n    at x"]))).toBe(false);
    expect(exhaustedByRetriableErrors(job(8, ["Error: a", "UnrecoverableError: on the last attempt"]))).toBe(false);
  });
});

describe("poller env", () => {
  it("reads CHAIN_ID and the optional tuning, refusing bad values", () => {
    expect(readPollerEnv({ CHAIN_ID: "1337", POLLER_INTERVAL_MS: "100", POLLER_START_BLOCK: "0" })).toEqual({
      chainIds: [1337],
      options: { intervalMs: 100, startBlock: 0, maxRangeBlocks: undefined },
    });
    expect(() => readPollerEnv({})).toThrow(ProcessEnvError);
    expect(() => readPollerEnv({ CHAIN_ID: "1337", POLLER_START_BLOCK: "-1" })).toThrow(ProcessEnvError);
    expect(() => readPollerEnv({ CHAIN_ID: "abc" })).toThrow(ProcessEnvError);
  });

  it("reads CHAIN_ID as a comma-separated list, in its order; a bad entry names the key", () => {
    expect(readPollerEnv({ CHAIN_ID: "1338, 1337" }).chainIds).toEqual([1338, 1337]);
    for (const [raw, message] of [
      ["", "CHAIN_ID must be set"],
      ["1337,", 'CHAIN_ID: "" is not a chain id'],
      ["1337,0", 'CHAIN_ID: "0" is not a chain id'],
      ["1337;1338", 'CHAIN_ID: "1337;1338" is not a chain id'],
      ["1337,1338,1337", "CHAIN_ID names chain 1337 twice"],
    ]) {
      expect(() => readPollerEnv({ CHAIN_ID: raw })).toThrow(message);
    }
  });

  it("checks each CHAIN_ID entry against chainConfig, naming the key", () => {
    const config = { chainConfig: { "1": {}, "1337": {} } } as unknown as RouterConfig;
    expect(() => checkPollerEnv({ CHAIN_ID: "1337,1" }, config)).not.toThrow();
    expect(() => checkPollerEnv({ CHAIN_ID: "1337,1338" }, config)).toThrow(
      "CHAIN_ID 1338 is not a key of chainConfig (configured: 1, 1337)",
    );
  });
});

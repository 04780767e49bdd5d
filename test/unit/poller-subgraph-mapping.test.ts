import { keccak256 } from "ethers";
import {
  SubgraphDataError,
  subgraphToRecord,
  type SubgraphTransaction,
} from "../../services/poller/sources/subgraph-mapping";

const USER = "0x1111111111111111111111111111111111111111";
const ROUTER = "0x627306090abab3a6e1400e9345bc60c78a8bef57";
const TX_ID = "0x" + "ab".repeat(32);
const HASH = "0x" + "cd".repeat(32);

const ENTITY: SubgraphTransaction = {
  id: `${TX_ID}-${USER}-${ROUTER}`,
  status: "Prepared",
  chainId: "1337",
  preparedTimestamp: "1700000123",
  user: { id: USER },
  router: { id: ROUTER },
  initiator: USER,
  receivingChainTxManagerAddress: "0x6090de2ec76eb1dc3b5d632734415c93c44fd113",
  sendingAssetId: "0x8ac76a51cc950d9822d68b83fe1ad97b32cd580d",
  receivingAssetId: "0x2791bca1f2de4661ed88a30c99a7a9449aa84174",
  sendingChainFallback: USER,
  receivingAddress: USER,
  callTo: "0x0000000000000000000000000000000000000000",
  sendingChainId: "1337",
  receivingChainId: "1338",
  callDataHash: keccak256("0x"),
  transactionId: TX_ID,
  amount: "1000000000000000000000",
  expiry: "1700300000",
  preparedBlockNumber: "42",
  encryptedCallData: "0x",
  encodedBid: "0x0102",
  bidSignature: "0x0304",
  relayerFee: null,
  signature: null,
  callData: null,
  prepareTransactionHash: HASH,
  fulfillTransactionHash: null,
  cancelTransactionHash: null,
};

describe("poller subgraph mapping", () => {
  it("maps a Prepared entity to the logs source's shape: checksummed addresses, numbers, decimal strings", () => {
    expect(subgraphToRecord(ENTITY)).toEqual({
      status: "Prepared",
      chainId: 1337,
      txData: {
        receivingChainTxManagerAddress: "0x6090De2EC76eb1Dc3B5d632734415c93c44Fd113",
        user: USER,
        router: "0x627306090abaB3A6e1400e9345bC60c78a8BEf57",
        initiator: USER,
        sendingAssetId: "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d",
        receivingAssetId: "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174",
        sendingChainFallback: USER,
        callTo: "0x0000000000000000000000000000000000000000",
        receivingAddress: USER,
        sendingChainId: 1337,
        receivingChainId: 1338,
        callDataHash: keccak256("0x"),
        transactionId: TX_ID,
        amount: "1000000000000000000000",
        expiry: 1_700_300_000,
        preparedBlockNumber: 42,
      },
      encryptedCallData: "0x",
      encodedBid: "0x0102",
      bidSignature: "0x0304",
      prepareTransactionHash: HASH,
      preparedTimestamp: 1_700_000_123,
    });
  });

  it("maps Fulfilled and Cancelled entities with their completion fields", () => {
    const fulfilled = subgraphToRecord({
      ...ENTITY,
      status: "Fulfilled",
      relayerFee: "5",
      signature: "0xAB",
      callData: "0x",
      fulfillTransactionHash: HASH,
    });
    expect(fulfilled).toMatchObject({
      status: "Fulfilled",
      relayerFee: "5",
      signature: "0xab",
      callData: "0x",
      fulfillTransactionHash: HASH,
    });
    const cancelled = subgraphToRecord({ ...ENTITY, status: "Cancelled", cancelTransactionHash: HASH });
    expect(cancelled).toMatchObject({ status: "Cancelled", cancelTransactionHash: HASH });
  });

  it.each([
    ["an unknown status", { status: "Pending" }],
    ["a non-decimal amount", { amount: "1e21" }],
    ["a malformed address", { sendingAssetId: "0x1234" }],
    ["a missing prepare hash", { prepareTransactionHash: null }],
    [
      "a Fulfilled entity without a signature",
      { status: "Fulfilled", relayerFee: "0", callData: "0x", fulfillTransactionHash: HASH },
    ],
    ["an expiry beyond a JSON number", { expiry: "99999999999999999999" }],
  ])("refuses %s with SubgraphDataError", (_, patch) => {
    expect(() => subgraphToRecord({ ...ENTITY, ...patch } as SubgraphTransaction)).toThrow(SubgraphDataError);
  });
});

import { ZeroAddress, keccak256 } from "ethers";
import { contractInterface } from "../../shared/chain/contracts";
import type { RawTmLog } from "../../shared/chain/tm-log-decoder";
import type { TransactionData } from "../../shared/protocol/types";

/** TransactionManager logs built with the real ABI, for the decoder's and the poller mapping's unit tests. */
const tm = contractInterface("TransactionManager");
export const USER = "0x1111111111111111111111111111111111111111";
export const ROUTER = "0x627306090abaB3A6e1400e9345bC60c78a8BEf57";
export const TOKEN = "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d";
export const TX_ID = "0x" + "ab".repeat(32);
export const HASH = "0x" + "cd".repeat(32);

export const TX_DATA: TransactionData = {
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

export function rawLog(name: string, values: unknown[], blockNumber = 42): RawTmLog {
  const event = tm.getEvent(name);
  if (!event) throw new Error(name);
  const { data, topics } = tm.encodeEventLog(event, values);
  return { data, topics, blockNumber, transactionHash: HASH.toUpperCase().replace("0X", "0x"), index: 3 };
}

export function preparedLog(txData: TransactionData = TX_DATA, blockNumber = 42): RawTmLog {
  return rawLog(
    "TransactionPrepared",
    [
      USER,
      ROUTER,
      TX_ID,
      txData,
      USER,
      {
        invariantData: { ...txData },
        amount: txData.amount,
        expiry: txData.expiry,
        encryptedCallData: "0xABCD",
        encodedBid: "0x0102",
        bidSignature: "0x0304",
        encodedMeta: "0x",
      },
    ],
    blockNumber,
  );
}

import { getAddress, type ContractTransactionReceipt, type JsonRpcProvider, type Wallet } from "ethers";
import {
  decodeTmLogs,
  isTransferEvent,
  transferEventTopic,
  type RawTmLog,
  type TransferEvent,
  type TransferEventKind,
} from "../../shared/chain/tm-log-decoder";
import { encodeBid } from "../../shared/protocol/bid";
import { abiFulfillArgs, abiPrepareArgs } from "../../shared/protocol/router-signatures";
import type { AuctionBid, InvariantTransactionData, TransactionData } from "../../shared/protocol/types";
import { signFulfill } from "../../shared/protocol/user-signatures";
import type { RouterSigner } from "../../shared/signer/router-signer";
import { nxtpContractAt, sendTx } from "./deploy-nxtp";

/**
 * What an NXTP user does on chain with a router's bid (docs/protocol.md#lifecycle): prepare on the sending chain with
 * the bid and its signature, then sign and send fulfill on the receiving chain. Chain handles are plain
 * (provider + TransactionManager address) so the demo and the tests can both use them.
 */
export interface UserChain {
  readonly chainId: number;
  readonly provider: JsonRpcProvider;
  readonly transactionManager: string;
}

/** TransactionManager.prepare with the bid as the router signed it; the user's fallback is the user. */
export async function prepareWithBid(
  chain: UserChain,
  user: Wallet,
  bid: AuctionBid,
  bidSignature: string,
): Promise<TransferEvent> {
  const invariantData: InvariantTransactionData = {
    receivingChainTxManagerAddress: bid.receivingChainTxManagerAddress,
    user: bid.user,
    router: bid.router,
    initiator: bid.initiator,
    sendingAssetId: bid.sendingAssetId,
    receivingAssetId: bid.receivingAssetId,
    sendingChainFallback: user.address,
    callTo: bid.callTo,
    receivingAddress: bid.receivingAddress,
    sendingChainId: bid.sendingChainId,
    receivingChainId: bid.receivingChainId,
    callDataHash: bid.callDataHash,
    transactionId: bid.transactionId,
  };
  const args = abiPrepareArgs({
    invariantData,
    amount: BigInt(bid.amount),
    expiry: bid.expiry,
    encryptedCallData: bid.encryptedCallData,
    encodedBid: encodeBid(bid),
    bidSignature,
    encodedMeta: "0x",
  });
  const isNative = getAddress(bid.sendingAssetId) === getAddress("0x0000000000000000000000000000000000000000");
  const tm = nxtpContractAt("TransactionManager", chain.transactionManager, user.connect(chain.provider));
  const receipt = await sendTx(tm, "prepare", [args], isNative ? { value: BigInt(bid.amount) } : {});
  return eventIn(receipt, chain, "prepared");
}

/** The user signs the fulfill payload (relayer fee 0) and sends fulfill on the receiving chain itself. */
export async function fulfillAsUser(chain: UserChain, user: Wallet, receiver: TransactionData): Promise<TransferEvent> {
  const signature = await signFulfill(walletSigner(user), {
    transactionId: receiver.transactionId,
    relayerFee: "0",
    receivingChainId: chain.chainId,
    receivingChainTxManagerAddress: chain.transactionManager,
  });
  const args = abiFulfillArgs({ txData: receiver, relayerFee: "0", signature, callData: "0x", encodedMeta: "0x" });
  const tm = nxtpContractAt("TransactionManager", chain.transactionManager, user.connect(chain.provider));
  return eventIn(await sendTx(tm, "fulfill", [args]), chain, "fulfilled");
}

/** Every `kind` event of the chain's TransactionManager for `transactionId` (indexed topic 3). */
export async function findTransferEvents(
  chain: UserChain,
  kind: TransferEventKind,
  transactionId: string,
  fromBlock = 0,
): Promise<TransferEvent[]> {
  const logs = await chain.provider.getLogs({
    address: chain.transactionManager,
    topics: [transferEventTopic(kind), null, null, transactionId],
    fromBlock,
    toBlock: "latest",
  });
  return transferEventsOf(logs);
}

export function eventIn(receipt: ContractTransactionReceipt, chain: UserChain, kind: TransferEventKind): TransferEvent {
  const ours = receipt.logs.filter((log) => log.address.toLowerCase() === chain.transactionManager.toLowerCase());
  const event = transferEventsOf(ours).find((e) => e.kind === kind);
  if (event === undefined) {
    throw new Error(`no ${kind} event in ${receipt.hash}`);
  }
  return event;
}

/** A demo or test tool stops at an undecodable log: it reads only its own fresh transactions. */
function transferEventsOf(logs: readonly RawTmLog[]): TransferEvent[] {
  const { events, undecodable } = decodeTmLogs(logs);
  const [first] = undecodable;
  if (first !== undefined) {
    throw new Error(`undecodable TransactionManager log in tx ${first.transactionHash}: ${first.reason}`);
  }
  return events.filter(isTransferEvent);
}

/** A user's wallet behind the signer interface signFulfill / signCancel take. */
export function walletSigner(wallet: Wallet): RouterSigner {
  return {
    kind: "mnemonic",
    getAddress: async () => wallet.address,
    signMessage: (message) => wallet.signMessage(message),
    signTransaction: () => Promise.reject(new Error("a user wallet signs no router transaction")),
  };
}

import {
  Wallet,
  ZeroAddress,
  hexlify,
  keccak256,
  randomBytes,
  type ContractTransactionReceipt,
  type ContractTransactionResponse,
  type Overrides,
} from "ethers";
import { readVariantTransactionData } from "../../shared/chain/router-balances";
import type { TransferEvent, TransferEventKind } from "../../shared/chain/tm-log-decoder";
import { amountAfterRouterFee } from "../../shared/protocol/amounts";
import { encodeBid, signBid } from "../../shared/protocol/bid";
import { completedVariantDigest, invariantDigest, invariantOf } from "../../shared/protocol/digests";
import { abiCancelArgs, abiFulfillArgs, abiPrepareArgs } from "../../shared/protocol/router-signatures";
import type { AuctionBid, InvariantTransactionData, TransactionData } from "../../shared/protocol/types";
import { signCancel, signFulfill } from "../../shared/protocol/user-signatures";
import { transferKey } from "../../shared/queues";
import type { RouterSigner } from "../../shared/signer/router-signer";
import {
  eventIn as eventInReceipt,
  findTransferEvents,
  walletSigner,
  type UserChain,
} from "../../scripts/local/swap-user";
import { nxtpContractAt, readBigInt, sendTx } from "../harness/deploy";
import type { StackChain } from "../harness/stack";
import { AMOUNT, RECEIVING, SENDING, type E2eStack } from "./e2e-fixture";
import { waitFor } from "../harness/wait";

/** What an NXTP user does, and what the test reads back from the chains (never from the router's Redis). */
export const EXPIRY_OFFSET_SEC = 3 * 86_400 + 3 * 3600; // the SDK's sending expiry
const TOKEN_DECIMALS = 18; // TestERC20 on both chains

export interface Tamper {
  readonly sendingAssetId?: string;
  readonly receivingChainId?: number;
  readonly receivingAddress?: string;
  /** Locked instead of bid.amount. */
  readonly amount?: bigint;
}

export interface PrepareParams {
  readonly bid?: Partial<AuctionBid>;
  /** What the user puts on chain instead of what the bid says. */
  readonly tamper?: Tamper;
  /** Signs the bid instead of the router signer. */
  readonly bidSigner?: RouterSigner;
  /** Reuses a transaction id (a second transfer under another's id); a fresh random one by default. */
  readonly transactionId?: string;
}

export interface UserTransfer {
  readonly bid: AuctionBid;
  /** The sending side as the chain stored it (its TransactionPrepared event). */
  readonly txData: TransactionData;
  readonly fallback: string;
  readonly transactionId: string;
  readonly key: string;
  readonly blockNumber: number;
}

/**
 * The bid the router's auction would have answered (amountReceived = amountAfterRouterFee, no gas fee on
 * anvil), signed with the router's key, then TransactionManager.prepare on 1337 by the user (expiry now + 3 d 3 h).
 * Each transfer refunds to a fallback address of its own.
 */
export async function userPrepare(s: E2eStack, p: PrepareParams = {}): Promise<UserTransfer> {
  const nowSec = await latestTimestamp(s.sending);
  const user = s.user.address;
  const transactionId = p.transactionId ?? hexlify(randomBytes(32));
  const bid: AuctionBid = {
    user,
    router: s.router,
    initiator: user,
    sendingChainId: SENDING,
    sendingAssetId: s.sending.deployment.token,
    amount: AMOUNT.toString(),
    receivingChainId: RECEIVING,
    receivingAssetId: s.receiving.deployment.token,
    amountReceived: amountAfterRouterFee({
      amount: AMOUNT,
      inputDecimals: TOKEN_DECIMALS,
      outputDecimals: TOKEN_DECIMALS,
    }).toString(),
    receivingAddress: user,
    transactionId,
    expiry: nowSec + EXPIRY_OFFSET_SEC,
    callDataHash: keccak256("0x"),
    callTo: ZeroAddress,
    encryptedCallData: "0x",
    sendingChainTxManagerAddress: s.sending.deployment.transactionManager,
    receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
    bidExpiry: nowSec + 300,
    ...p.bid,
  };
  const encodedBid = encodeBid(bid);
  const bidSignature = await signBid(p.bidSigner ?? s.routerSigner, bid);
  const fallback = Wallet.createRandom().address;
  const t = p.tamper ?? {};
  const invariantData: InvariantTransactionData = {
    receivingChainTxManagerAddress: bid.receivingChainTxManagerAddress,
    user,
    router: s.router,
    initiator: user,
    sendingAssetId: t.sendingAssetId ?? bid.sendingAssetId,
    receivingAssetId: bid.receivingAssetId,
    sendingChainFallback: fallback,
    callTo: bid.callTo,
    receivingAddress: t.receivingAddress ?? bid.receivingAddress,
    sendingChainId: SENDING,
    receivingChainId: t.receivingChainId ?? bid.receivingChainId,
    callDataHash: bid.callDataHash,
    transactionId,
  };
  const args = {
    invariantData,
    amount: t.amount ?? AMOUNT,
    expiry: bid.expiry,
    encryptedCallData: "0x",
    encodedBid,
    bidSignature,
    encodedMeta: "0x",
  };
  const receipt = await sendTx(tm(s.sending, s.user), "prepare", [abiPrepareArgs(args)]);
  const event = eventIn(receipt, s.sending, "prepared");
  return {
    bid,
    txData: event.txData,
    fallback,
    transactionId,
    key: transferKey(transactionId, user),
    blockNumber: receipt.blockNumber,
  };
}

/** The user signs the fulfill payload (relayer fee 0) and sends fulfill on the receiving chain itself. */
export async function userFulfill(s: E2eStack, receiver: TransactionData): Promise<TransferEvent> {
  const receipt = await (await sendUserFulfill(s, receiver)).wait();
  if (receipt === null) {
    throw new Error("the user's fulfill was dropped");
  }
  return eventIn(receipt, s.receiving, "fulfilled");
}

/** userFulfill, not waited for (blocks may be stopped): `overrides` set its gas and fees. */
export async function sendUserFulfill(
  s: E2eStack,
  receiver: TransactionData,
  overrides: Overrides = {},
): Promise<ContractTransactionResponse> {
  const signature = await signFulfill(walletSigner(s.user), {
    transactionId: receiver.transactionId,
    relayerFee: "0",
    receivingChainId: RECEIVING,
    receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
  });
  const args = abiFulfillArgs({ txData: receiver, relayerFee: "0", signature, callData: "0x", encodedMeta: "0x" });
  return tm(s.receiving, s.user).getFunction("fulfill").send(args, overrides);
}

/**
 * docs/protocol.md#tm-calls, cancel of a receiving side: before expiry the user may cancel it (msg.sender == user, and
 * signed).
 */
export async function userCancelReceiver(s: E2eStack, receiver: TransactionData): Promise<TransferEvent> {
  const signature = await signCancel(walletSigner(s.user), {
    transactionId: receiver.transactionId,
    receivingChainId: RECEIVING,
    receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
  });
  const args = abiCancelArgs({ txData: receiver, signature, encodedMeta: "0x" });
  return eventIn(await sendTx(tm(s.receiving, s.user), "cancel", [args]), s.receiving, "cancelled");
}

/** Every `kind` event of the TransactionManager for `transactionId`, whoever the router or user (topic 3 only). */
export async function transferEvents(
  chain: StackChain,
  kind: TransferEventKind,
  transactionId: string,
): Promise<TransferEvent[]> {
  return findTransferEvents(userChain(chain), kind, transactionId);
}

export async function waitForEvent(
  chain: StackChain,
  kind: TransferEventKind,
  transactionId: string,
  timeoutMs = 15_000,
): Promise<TransferEvent> {
  return waitFor(
    `${kind} of ${transactionId.slice(0, 10)} on ${chain.chainId}`,
    async () => (await transferEvents(chain, kind, transactionId))[0],
    timeoutMs,
  );
}

/** The account that sent the transaction that emitted `event`. */
export async function senderOf(chain: StackChain, event: TransferEvent): Promise<string | undefined> {
  return (await chain.provider.getTransaction(event.transactionHash))?.from;
}

/** ERC20 balance of `owner` in TEST, or in `token`. */
export function tokenBalance(chain: StackChain, owner: string, token = chain.deployment.token): Promise<bigint> {
  return readBigInt(nxtpContractAt("ERC20", token, chain.provider), "balanceOf", [owner]);
}

export function routerLiquidity(s: E2eStack, chain: StackChain): Promise<bigint> {
  return readBigInt(chain.deployment.contracts.transactionManager, "routerBalances", [
    s.router,
    chain.deployment.token,
  ]);
}

/** True when the side of `txData` on `chain` was fulfilled or cancelled (variant with preparedBlockNumber 0). */
export async function isCompleted(chain: StackChain, txData: TransactionData): Promise<boolean> {
  const actual = await readVariantTransactionData(
    chain.provider,
    chain.deployment.transactionManager,
    invariantDigest(invariantOf(txData)),
  );
  return actual === completedVariantDigest(txData.amount, txData.expiry);
}

export async function latestTimestamp(chain: StackChain): Promise<number> {
  const block = await chain.provider.getBlock("latest");
  if (!block) throw new Error("no latest block");
  return block.timestamp;
}

/**
 * Moves every chain's clock forward together, mining a block on each: the router compares times across chains
 * (a sender cancel checks the 780 s rule against the earlier of the sending and receiving clocks), and chain 1
 * is a receiving chain for the "another receiving chain" fraud.
 */
export async function increaseTime(s: E2eStack, seconds: number): Promise<void> {
  for (const chain of [s.chain1, s.sending, s.receiving]) {
    await chain.anvil.increaseTime(seconds);
    await chain.anvil.mine(1);
  }
}

/**
 * Wall-clock time at which each new block of the watched chains was first seen (eth_blockNumber every 5 ms),
 * so the latency between blocks of two chains is measured the same way on both sides.
 */
export interface BlockClock {
  /** Waits (up to 5 s) until the clock saw the block. */
  seenAtMs(chainId: number, block: number): Promise<number>;
  stop(): Promise<void>;
}

export async function startBlockClock(chains: readonly StackChain[]): Promise<BlockClock> {
  const seen = new Map<string, number>();
  const last = new Map<number, number>();
  for (const c of chains) last.set(c.chainId, await c.provider.getBlockNumber());
  let running = true;
  const loop = (async () => {
    while (running) {
      await Promise.all(
        chains.map(async (c) => {
          const head = await c.provider.getBlockNumber();
          const now = Date.now();
          for (let b = (last.get(c.chainId) ?? head) + 1; b <= head; b += 1) seen.set(`${c.chainId}:${b}`, now);
          last.set(c.chainId, Math.max(head, last.get(c.chainId) ?? head));
        }),
      );
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    seenAtMs: (chainId, block) =>
      waitFor(`block ${block} of ${chainId} seen by the clock`, async () => seen.get(`${chainId}:${block}`), 5_000),
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

function tm(chain: StackChain, wallet: Wallet) {
  return nxtpContractAt("TransactionManager", chain.deployment.transactionManager, wallet.connect(chain.provider));
}

function eventIn(receipt: ContractTransactionReceipt, chain: StackChain, kind: TransferEventKind): TransferEvent {
  return eventInReceipt(receipt, userChain(chain), kind);
}

function userChain(chain: StackChain): UserChain {
  return { chainId: chain.chainId, provider: chain.provider, transactionManager: chain.deployment.transactionManager };
}

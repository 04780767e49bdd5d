import { Wallet, ZeroAddress, hexlify, keccak256, randomBytes } from "ethers";
import { connectMessaging } from "../../shared/messaging";
import type { Messaging, MessagingResponse } from "../../shared/messaging/types";
import type { AuctionBid } from "../../shared/protocol/types";
import { prepareWithBid } from "../../scripts/local/swap-user";
import { AMOUNT, RECEIVING, SENDING, type E2eStack } from "../e2e/e2e-fixture";
import { userFulfill, waitForEvent } from "../e2e/e2e-user";
import { auditRouterTxs, describeAudit, type ChainAudit } from "../fault/swap-audit";
import { captureLogs } from "../harness/logs";
import type { Bed } from "./bed";
import { waitFor } from "../harness/wait";

/**
 * The test process's side of the bed, shared by the direct and the PM2 suites: a NATS client that asks for bids
 * as the SDK does (through the bed's door), a user's whole swap with the e2e helpers, and the on-chain audit.
 */
export const SDK_BID_WINDOW_MS = 6_000; // the NXTP SDK waits this long for bids
export const SWAP_STEP_MS = 30_000;

export interface BidReply {
  readonly bid: AuctionBid;
  readonly bidSignature: string;
}

export interface BidAnswer {
  readonly reply: BidReply;
  readonly inbox: string;
  readonly ms: number;
  readonly transactionId: string;
}

export interface BedClient {
  /** Every auction response received so far (to count answers per request). */
  readonly responses: readonly MessagingResponse[];
  /** One auction.request as the SDK sends it; the first bid within `timeoutMs`, with its latency. */
  requestBid(user: string, timeoutMs?: number): Promise<BidAnswer>;
  /** The test's own NATS connection is up (false while it reconnects after its server died). */
  isConnected(): boolean;
  /**
   * A bid, then the whole swap by the user (prepare, the router's prepare, fulfill, the router's claim), each of
   * the router's steps within `stepMs` (SWAP_STEP_MS by default).
   */
  swap(
    u: E2eStack,
    stepMs?: number,
  ): Promise<{ transactionId: string; bidMs: number; inbox: string; amountReceived: bigint }>;
  close(): Promise<void>;
}

export async function connectBedClient(bed: Bed): Promise<BedClient> {
  const wallet = Wallet.createRandom();
  const responses: MessagingResponse[] = [];
  const messaging: Messaging = await connectMessaging({
    servers: bed.natsUrls,
    authUrl: bed.authUrl,
    logger: captureLogs("client").logger,
    signer: { getAddress: async () => wallet.address, signMessage: (m) => wallet.signMessage(m) },
  });
  messaging.onResponse("auction", (r) => responses.push(r));
  await messaging.flush();

  const requestBid = async (user: string, timeoutMs = SDK_BID_WINDOW_MS): Promise<BidAnswer> => {
    const payload = requestPayload(bed, user);
    const inbox = `_INBOX.${hexlify(randomBytes(12))}`;
    const startedAtMs = Date.now();
    messaging.request("auction", payload, inbox);
    const response = await waitFor(
      `a bid on ${inbox}`,
      async () => responses.find((r) => r.responseInbox === inbox),
      timeoutMs,
    );
    return {
      reply: response.data as BidReply,
      inbox,
      ms: Date.now() - startedAtMs,
      transactionId: String(payload.transactionId),
    };
  };

  return {
    responses,
    requestBid,
    isConnected: () => messaging.isConnected(),
    swap: async (u, stepMs = SWAP_STEP_MS) => {
      const { reply, ms, inbox } = await requestBid(u.user.address);
      const t = await userPrepares(u, reply);
      const prepared = await waitForEvent(u.receiving, "prepared", t.transactionId, stepMs);
      await userFulfill(u, prepared.txData);
      await waitForEvent(u.sending, "fulfilled", t.transactionId, stepMs);
      return { transactionId: t.transactionId, bidMs: ms, inbox, amountReceived: BigInt(reply.bid.amountReceived) };
    },
    close: () => messaging.close(),
  };
}

function requestPayload(bed: Bed, user: string): Record<string, unknown> {
  const nowSec = Math.floor(Date.now() / 1000);
  return {
    user,
    initiator: user,
    sendingChainId: SENDING,
    sendingAssetId: bed.s.sending.deployment.token,
    amount: AMOUNT.toString(),
    receivingChainId: RECEIVING,
    receivingAssetId: bed.s.receiving.deployment.token,
    receivingAddress: user,
    callTo: ZeroAddress,
    callDataHash: keccak256("0x"),
    encryptedCallData: "0x",
    expiry: nowSec + 3 * 86400 + 3 * 3600,
    transactionId: hexlify(randomBytes(32)),
    dryRun: false,
  };
}

/** TransactionManager.prepare on the sending chain with the auction's bid, as the SDK does. */
export async function userPrepares(u: E2eStack, reply: BidReply): Promise<{ transactionId: string }> {
  const chain = {
    chainId: SENDING,
    provider: u.sending.provider,
    transactionManager: u.sending.deployment.transactionManager,
  };
  const event = await prepareWithBid(chain, u.user, reply.bid, reply.bidSignature);
  return { transactionId: event.txData.transactionId };
}

/** The router's transactions on the sending and the receiving chain (in that order) after `startBlocks`. */
export function auditBed(b: Bed, startBlocks: Readonly<Record<number, number>>): Promise<ChainAudit[]> {
  return Promise.all(
    [b.s.sending, b.s.receiving].map((c) => auditRouterTxs(c, b.s.router, startBlocks[c.chainId] + 1)),
  );
}

/** No reverted router transaction, no transfer served twice, no nonce hole, on either chain. */
export function expectCleanAudit(all: readonly ChainAudit[]): void {
  for (const a of all) {
    expect({ chain: a.chainId, reverted: a.reverted, duplicates: a.duplicates, gaps: a.nonceGaps }).toEqual({
      chain: a.chainId,
      reverted: [],
      duplicates: [],
      gaps: [],
    });
  }
}

/**
 * Prints the audit and expects it clean, with each transfer served once: one router prepare on the receiving chain
 * and one claim (fulfill) on the sending chain.
 */
export function expectEachSwapOnce(all: readonly ChainAudit[], transactionIds: readonly string[]): void {
  process.stdout.write(`${all.map(describeAudit).join("\n")}\n`);
  expectCleanAudit(all);
  for (const id of transactionIds) {
    expect(all[1].txs.filter((x) => x.transactionId === id && x.method === "prepare")).toHaveLength(1);
    expect(all[0].txs.filter((x) => x.transactionId === id && x.method === "fulfill")).toHaveLength(1);
  }
}

/** `fn`, its failure carrying the bed's process outputs. */
export function withOutputs<T>(b: Bed, fn: () => Promise<T>): Promise<T> {
  return fn().catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${b.outputs(2_500)}`);
  });
}

import { randomUUID } from "node:crypto";
import { Wallet, ZeroAddress, formatEther, getAddress, hexlify, keccak256, randomBytes } from "ethers";
import { createLogger } from "../../shared/logging/create-logger";
import { connectMessaging } from "../../shared/messaging";
import type { Messaging, MessagingResponse, MessagingTopic } from "../../shared/messaging/types";
import { recoverBidSigner } from "../../shared/protocol/bid";
import type { AuctionBid, TransactionData } from "../../shared/protocol/types";
import type { LocalChainHandle } from "./chains";
import { nxtpContractAt, readBigInt, sendTx } from "./deploy-nxtp";
import { findTransferEvents, fulfillAsUser, prepareWithBid, type UserChain } from "./swap-user";
import { sleep } from "../../shared/timing";

/**
 * The demo client of `npm run local`: one swap of the test token from 1337 to 1338 the way an SDK user does
 * it, against the router running under PM2. Auction over NATS (through the local auth service) → the user's
 * sending prepare → the router's receiving prepare → the user's fulfill → the router's claim on the sending
 * chain. Each step is printed with the time since the demo began.
 */
export interface DemoChain extends UserChain {
  readonly token: string;
}

/** A deployed local chain as the demo user sees it. */
export function demoChainOf(chain: LocalChainHandle): DemoChain {
  return {
    chainId: chain.chainId,
    provider: chain.provider,
    transactionManager: chain.deployment.transactionManager,
    token: chain.deployment.token,
  };
}

export interface DemoSwapParams {
  readonly messagingUrl: string;
  readonly authUrl: string;
  readonly sending: DemoChain;
  readonly receiving: DemoChain;
  /** Holds the token on the sending chain and gas on both. */
  readonly user: Wallet;
  /** Router address the bid must name (the signer in direct mode). */
  readonly router: string;
  readonly amountWei: bigint;
  readonly print: (line: string) => void;
  /** Auctions are refused (and not answered) until the pollers cached balances: ask again until this passes. */
  readonly bidTimeoutMs?: number;
  readonly routerStepTimeoutMs?: number;
  /** Told when the user's prepare is mined and when the router's receiving prepare is seen (bench:capacity). */
  readonly onPrepared?: (who: "user" | "router", atMs: number) => void;
}

export interface DemoSwapResult {
  readonly transactionId: string;
  readonly amountReceivedWei: bigint;
  readonly gasFeeWei: bigint;
  readonly totalMs: number;
}

/** The user's SDK would wait about this long for bids before asking again. */
const AUCTION_ROUND_MS = 3_000;
const POLL_MS = 100;

export async function runDemoSwap(p: DemoSwapParams): Promise<DemoSwapResult> {
  const startedAtMs = Date.now();
  const step = (what: string): void => p.print(`  +${String(Date.now() - startedAtMs).padStart(6)} ms  ${what}`);
  const balancesBefore = await readBalances(p);

  // Like the SDK: a throw-away messaging key, not the user's wallet.
  const client = await connectClient(p);
  try {
    step(`messaging: connected to ${p.messagingUrl} as ${client.address} (token from ${p.authUrl})`);
    const { bid, bidSignature, gasFeeWei } = await auction(p, client, step);
    const signer = recoverBidSigner(bid, bidSignature);
    step(
      `auction: bid from router ${bid.router} (signed by ${signer}): ${fmt(bid.amount)} TEST in → ${fmt(bid.amountReceived)} TEST out ` +
        `(router fee ${fmt(BigInt(bid.amount) - BigInt(bid.amountReceived) - gasFeeWei)}, gas fee ${fmt(gasFeeWei)})`,
    );

    const approveTm = nxtpContractAt("ERC20", p.sending.token, p.user.connect(p.sending.provider));
    await sendTx(approveTm, "approve", [p.sending.transactionManager, BigInt(bid.amount)]);
    const sent = await prepareWithBid(p.sending, p.user, bid, bidSignature);
    p.onPrepared?.("user", Date.now());
    step(`user: prepare on ${p.sending.chainId} in block ${sent.blockNumber} (tx ${sent.transactionHash})`);

    const received = await waitForEvent(p.receiving, "prepared", bid.transactionId, p.routerStepTimeoutMs);
    p.onPrepared?.("router", Date.now());
    step(
      `router: prepare on ${p.receiving.chainId} in block ${received.blockNumber}, ${fmt(BigInt(received.txData.amount))} TEST locked for the user (tx ${received.transactionHash})`,
    );

    const fulfilled = await fulfillAsUser(p.receiving, p.user, received.txData as TransactionData);
    step(`user: fulfill on ${p.receiving.chainId} in block ${fulfilled.blockNumber} (tx ${fulfilled.transactionHash})`);

    const claimed = await waitForEvent(p.sending, "fulfilled", bid.transactionId, p.routerStepTimeoutMs);
    step(
      `router: fulfill (claim) on ${p.sending.chainId} in block ${claimed.blockNumber} (tx ${claimed.transactionHash})`,
    );

    const balancesAfter = await readBalances(p);
    p.print("");
    p.print(balanceTable(balancesBefore, balancesAfter));
    return {
      transactionId: bid.transactionId,
      amountReceivedWei: BigInt(bid.amountReceived),
      gasFeeWei,
      totalMs: Date.now() - startedAtMs,
    };
  } finally {
    await client.close();
  }
}

interface Client {
  readonly address: string;
  readonly messaging: Messaging;
  /** Waits for the first response on `inbox` of `topic`; undefined after `timeoutMs`. */
  ask(topic: MessagingTopic, data: unknown, timeoutMs: number): Promise<MessagingResponse | undefined>;
  close(): Promise<void>;
}

async function connectClient(p: Pick<DemoSwapParams, "messagingUrl" | "authUrl">): Promise<Client> {
  const key = Wallet.createRandom();
  const messaging = await connectMessaging({
    servers: p.messagingUrl,
    authUrl: p.authUrl,
    signer: { getAddress: async () => key.address, signMessage: (m) => key.signMessage(m) },
    logger: createLogger({ level: "silent", service: "demo-client" }),
    name: "npm-run-local-demo",
  });
  const responses = new Map<string, MessagingResponse>();
  for (const topic of ["auction", "status"] as const) {
    messaging.onResponse(topic, (r) => {
      if (r.responseInbox !== null && !responses.has(r.responseInbox)) {
        responses.set(r.responseInbox, r);
      }
    });
  }
  await messaging.flush();
  return {
    address: key.address,
    messaging,
    ask: async (topic, data, timeoutMs) => {
      const inbox = `_INBOX.${randomUUID()}`;
      messaging.request(topic, data, inbox);
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const found = responses.get(inbox);
        if (found) {
          return found;
        }
        await sleep(20);
      }
      return undefined;
    },
    close: () => messaging.close(),
  };
}

/** Readiness of the auction process: it answers a status request over NATS (docs/protocol.md#status). */
export async function waitForAuctionStatus(
  p: Pick<DemoSwapParams, "messagingUrl" | "authUrl">,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  const client = await connectClient(p);
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const reply = await client.ask("status", { requestee: client.address }, 2_000);
      if (reply?.data && typeof reply.data === "object") {
        return reply.data as Record<string, unknown>;
      }
    }
    throw new Error(`no auction answered a status request within ${timeoutMs} ms`);
  } finally {
    await client.close();
  }
}

interface Bid {
  readonly bid: AuctionBid;
  readonly bidSignature: string;
  readonly gasFeeWei: bigint;
}

async function auction(p: DemoSwapParams, client: Client, step: (what: string) => void): Promise<Bid> {
  const user = p.user.address;
  const transactionId = hexlify(randomBytes(32));
  const payload = {
    user,
    initiator: user,
    sendingChainId: p.sending.chainId,
    sendingAssetId: p.sending.token,
    amount: p.amountWei.toString(),
    receivingChainId: p.receiving.chainId,
    receivingAssetId: p.receiving.token,
    receivingAddress: user,
    callTo: ZeroAddress,
    callDataHash: keccak256("0x"),
    encryptedCallData: "0x",
    // The SDK's sending expiry: now + 3 days 3 hours.
    expiry: Math.floor(Date.now() / 1000) + 3 * 86_400 + 3 * 3_600,
    transactionId,
    dryRun: false,
  };
  const deadline = Date.now() + (p.bidTimeoutMs ?? 60_000);
  for (let round = 1; ; round += 1) {
    step(
      `auction: request ${round} for ${fmt(p.amountWei)} TEST ${p.sending.chainId} → ${p.receiving.chainId} (transactionId ${transactionId.slice(0, 10)}…)`,
    );
    const reply = await client.ask("auction", payload, AUCTION_ROUND_MS);
    const parsed = reply ? parseBidResponse(reply) : undefined;
    if (parsed && getAddress(parsed.bid.router) === getAddress(p.router)) {
      return parsed;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `no bid from router ${p.router} within ${p.bidTimeoutMs ?? 60_000} ms (refusals are logged by the auction process)`,
      );
    }
    step("auction: no bid yet (the auction refuses until the pollers have cached balances); asking again");
  }
}

function parseBidResponse(reply: MessagingResponse): Bid | undefined {
  const data = reply.data as { bid?: AuctionBid; bidSignature?: string | null; gasFeeInReceivingToken?: string } | null;
  if (!data?.bid || typeof data.bidSignature !== "string") {
    return undefined;
  }
  return { bid: data.bid, bidSignature: data.bidSignature, gasFeeWei: BigInt(data.gasFeeInReceivingToken ?? "0") };
}

async function waitForEvent(
  chain: UserChain,
  kind: "prepared" | "fulfilled",
  transactionId: string,
  timeoutMs = 60_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [event] = await findTransferEvents(chain, kind, transactionId);
    if (event) {
      return event;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `the router's ${kind === "prepared" ? "receiving prepare" : "sending fulfill"} did not appear on chain ${chain.chainId} within ${timeoutMs} ms`,
      );
    }
    await sleep(POLL_MS);
  }
}

interface Balances {
  readonly userSending: bigint;
  readonly userReceiving: bigint;
  readonly routerSending: bigint;
  readonly routerReceiving: bigint;
}

async function readBalances(p: DemoSwapParams): Promise<Balances> {
  const token = (c: DemoChain, owner: string): Promise<bigint> =>
    readBigInt(nxtpContractAt("ERC20", c.token, c.provider), "balanceOf", [owner]);
  const liquidity = (c: DemoChain): Promise<bigint> =>
    readBigInt(nxtpContractAt("TransactionManager", c.transactionManager, c.provider), "routerBalances", [
      p.router,
      c.token,
    ]);
  const [userSending, userReceiving, routerSending, routerReceiving] = await Promise.all([
    token(p.sending, p.user.address),
    token(p.receiving, p.user.address),
    liquidity(p.sending),
    liquidity(p.receiving),
  ]);
  return { userSending, userReceiving, routerSending, routerReceiving };
}

function balanceTable(before: Balances, after: Balances): string {
  const rows: Array<[string, keyof Balances]> = [
    ["user TEST on 1337 (wallet)", "userSending"],
    ["user TEST on 1338 (wallet)", "userReceiving"],
    ["router TEST liquidity on 1337", "routerSending"],
    ["router TEST liquidity on 1338", "routerReceiving"],
  ];
  const lines = [`  ${"balance".padEnd(32)}${"before".padStart(16)}${"after".padStart(16)}${"change".padStart(16)}`];
  for (const [label, key] of rows) {
    const delta = after[key] - before[key];
    lines.push(
      `  ${label.padEnd(32)}${fmt(before[key]).padStart(16)}${fmt(after[key]).padStart(16)}${((delta > 0n ? "+" : "") + fmt(delta)).padStart(16)}`,
    );
  }
  return lines.join("\n");
}

/** Wei → TEST with at most 6 decimals (TestERC20 has 18). */
function fmt(wei: bigint | string): string {
  const [whole, frac = ""] = formatEther(BigInt(wei)).split(".");
  const trimmed = frac.slice(0, 6).replace(/0+$/, "");
  return trimmed === "" ? whole : `${whole}.${trimmed}`;
}

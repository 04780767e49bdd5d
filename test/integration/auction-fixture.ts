import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Wallet, ZeroAddress, getAddress, hexlify, keccak256, parseEther, randomBytes } from "ethers";
import { Redis } from "ioredis";
import type { AuthServer } from "../../services/messaging-auth/app";
import { startAuction, type AuctionOptions, type RunningAuction } from "../../services/auction/start-auction";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { connectMessaging } from "../../shared/messaging";
import type { Messaging, MessagingResponse } from "../../shared/messaging/types";
import type { AuctionBid } from "../../shared/protocol/types";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { createBalanceStore, type BalanceStore } from "../../shared/transfers/balance-store";
import { startAuthServer } from "../harness/auth-server";
import { captureLogs, type LogCapture } from "../harness/logs";
import { sendTx } from "../harness/deploy";
import { startStackAnd, type Stack } from "../harness/stack";
import { waitFor } from "../harness/wait";

export const SENDING = 1337;
export const RECEIVING = 1338;
/** What the gas station serves (gwei): a fixed price makes the expected gas fee exact. */
export const STATION_GWEI = 10n;
/** USD × 1e18 on chain 1's oracle: the pool token (via mainnetEquivalent) and chain 1's native (via nativeMainnetEquivalent). */
export const TOKEN_PRICE = parseEther("1");
export const NATIVE_PRICE = parseEther("200");
export const MIN_GAS = parseEther("0.1");

export interface AuctionStack {
  readonly stack: Stack;
  readonly auth: AuthServer;
  readonly station: Server;
  readonly stationUrl: string;
  readonly redis: Redis;
  readonly natsUrl: string;
  readonly mainnetToken: string;
  readonly sendingToken: string;
  readonly receivingToken: string;
  stop(): Promise<void>;
}

/** Chains 1 (oracle), 1337 and 1338 with NXTP, redis, nats, the auth service and a local gas station server. */
export async function startAuctionStack(): Promise<AuctionStack> {
  const stack = await startStackAnd({ chainIds: [1, SENDING, RECEIVING] }, async (started) => {
    const oracle = started.chain(1).deployment.contracts.priceOracle;
    await sendTx(oracle, "setDirectPrice", [started.chain(1).deployment.token, TOKEN_PRICE]);
    await sendTx(oracle, "setDirectPrice", [ZeroAddress, NATIVE_PRICE]);
    return started;
  });
  if (!stack.redis || !stack.nats) throw new Error("stack without redis or nats");
  const mainnet = stack.chain(1);
  const auth = await startAuthServer().catch(async (err: unknown) => {
    await stack.stop();
    throw err;
  });
  const station = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ fast: Number(STATION_GWEI) }));
  });
  await new Promise<void>((resolve) => station.listen({ host: "127.0.0.1", port: 0 }, resolve));
  const redis = new Redis(stack.redis.url);
  return {
    stack,
    auth,
    station,
    redis,
    stationUrl: `http://127.0.0.1:${(station.address() as AddressInfo).port}/gas`,
    natsUrl: stack.nats.url,
    mainnetToken: mainnet.deployment.token,
    sendingToken: stack.chain(SENDING).deployment.token,
    receivingToken: stack.chain(RECEIVING).deployment.token,
    stop: async () => {
      await redis.quit().catch(() => undefined);
      await new Promise<void>((resolve) => station.close(() => resolve()));
      await auth.close();
      await stack.stop();
    },
  };
}

export interface AuctionConfigParams {
  readonly prefix: string;
  readonly mnemonic: string;
  readonly cleanUpMode?: boolean;
  readonly diagnosticMode?: boolean;
  readonly requestLimit?: number;
  /** Chain 1's oracle address; the stack's oracle by default. */
  readonly oracle?: string;
  /** The pool's `inventory` targets (docs/config.md, "Inventory targets"); none by default. */
  readonly inventory?: Record<string, { targetPercent: number; minimumPercent: number; floor?: string }>;
}

export function auctionConfig(s: AuctionStack, p: AuctionConfigParams): RouterConfig {
  const chain = (chainId: number): Record<string, unknown> => ({
    providers: [s.stack.chain(chainId).anvil.url],
    transactionManagerAddress: s.stack.chain(chainId).deployment.transactionManager,
    confirmations: 1,
    gasStations: [s.stationUrl],
    nativeMainnetEquivalent: ZeroAddress,
    minGas: MIN_GAS.toString(),
  });
  const raw = {
    adminToken: "integration-test-admin-token",
    mnemonic: p.mnemonic,
    logLevel: "debug",
    redisUrl: s.stack.redis?.url,
    redisPrefix: p.prefix,
    messagingUrl: s.natsUrl,
    authUrl: s.auth.url,
    requestLimit: p.requestLimit ?? 60_000,
    cleanUpMode: p.cleanUpMode ?? false,
    diagnosticMode: p.diagnosticMode ?? false,
    swapPools: [
      {
        assets: [
          { chainId: SENDING, assetId: s.sendingToken, mainnetEquivalent: s.mainnetToken },
          { chainId: RECEIVING, assetId: s.receivingToken, mainnetEquivalent: s.mainnetToken },
        ],
        ...(p.inventory ? { inventory: p.inventory } : {}),
      },
    ],
    chainConfig: {
      "1": {
        providers: [s.stack.chain(1).anvil.url],
        transactionManagerAddress: s.stack.chain(1).deployment.transactionManager,
        priceOracleAddress: p.oracle ?? s.stack.chain(1).deployment.priceOracle,
      },
      [String(SENDING)]: chain(SENDING),
      [String(RECEIVING)]: chain(RECEIVING),
    },
  };
  return loadConfig(raw, {}).config;
}

export interface AuctionInstance {
  readonly running: RunningAuction;
  readonly logs: LogCapture;
  /** The instance's own Messaging when the test injected it (to flush what it published). */
  readonly messaging?: Messaging;
  /** Outcome lines of this instance's auctions. */
  outcomes(): Array<Record<string, unknown>>;
}

export interface StartInstanceParams {
  readonly config: RouterConfig;
  /** Connect the instance's Messaging in the test (true) or let start-auction connect from the config (false). */
  readonly injectMessaging?: boolean;
  readonly options?: AuctionOptions;
}

export async function startInstance(p: StartInstanceParams): Promise<AuctionInstance> {
  const logs = captureLogs("auction");
  let messaging: Messaging | undefined;
  if (p.injectMessaging) {
    const mnemonic = p.config.mnemonic;
    if (!mnemonic) throw new Error("config without mnemonic");
    messaging = await connectMessaging({
      servers: p.config.messagingUrl,
      authUrl: p.config.authUrl,
      signer: createMnemonicSigner(mnemonic),
      logger: logs.logger,
    });
  }
  const running = await startAuction({
    config: p.config,
    logger: logs.logger,
    // Shortened (default 15 s) so a case that breaks a price source sees the refresher retry within its wait.
    options: { refreshIntervalMs: 500, ...p.options, ...(messaging ? { messaging } : {}) },
  });
  return { running, logs, messaging, outcomes: () => logs.find("auction.outcome") };
}

/** Balances the pollers would write: router liquidity on the receiving chain and the signer's gas on both. */
export async function writeBalances(
  s: AuctionStack,
  prefix: string,
  p: { liquidity?: bigint; gasSending?: bigint; gasReceiving?: bigint } = {},
): Promise<BalanceStore> {
  const balances = createBalanceStore(s.redis, prefix);
  await balances.setRouterBalance(RECEIVING, s.receivingToken, p.liquidity ?? parseEther("1000000"));
  await balances.setGasBalance(SENDING, p.gasSending ?? parseEther("10"));
  await balances.setGasBalance(RECEIVING, p.gasReceiving ?? parseEther("10"));
  return balances;
}

export interface Client {
  readonly address: string;
  readonly messaging: Messaging;
  readonly responses: MessagingResponse[];
  /** Publishes an auction request; resolves with its inbox. */
  request(data: unknown): string;
  /** Waits for the first response on `inbox`. */
  responseTo(inbox: string, timeoutMs?: number): Promise<MessagingResponse>;
  responsesTo(inbox: string): MessagingResponse[];
  close(): Promise<void>;
}

/** A user's messaging client with its own throw-away key, like the SDK's default messaging signer. */
export async function startClient(s: AuctionStack): Promise<Client> {
  const wallet = Wallet.createRandom();
  const logs = captureLogs("client");
  const messaging = await connectMessaging({
    servers: s.natsUrl,
    authUrl: s.auth.url,
    logger: logs.logger,
    signer: { getAddress: async () => wallet.address, signMessage: (m) => wallet.signMessage(m) },
  });
  const responses: MessagingResponse[] = [];
  messaging.onResponse("auction", (r) => responses.push(r));
  await messaging.flush();
  const responsesTo = (inbox: string): MessagingResponse[] => responses.filter((r) => r.responseInbox === inbox);
  return {
    address: wallet.address,
    messaging,
    responses,
    request: (data) => {
      const inbox = `_INBOX.${randomUUID()}`;
      messaging.request("auction", data, inbox);
      return inbox;
    },
    responseTo: (inbox, timeoutMs = 10_000) =>
      waitFor(`a response on ${inbox}`, () => responsesTo(inbox)[0], timeoutMs),
    responsesTo,
    close: () => messaging.close(),
  };
}

/** The router's bid for `data`, or its refusal code: every request ends in exactly one outcome line. */
export async function askFor(
  router: AuctionInstance,
  client: Client,
  data: Record<string, unknown>,
): Promise<AuctionBid | string> {
  const inbox = client.request(data);
  const line = await waitFor(`outcome of ${String(data.transactionId)}`, () =>
    router.outcomes().find((l) => l.transactionId === data.transactionId),
  );
  if (line.result !== "bid") return String(line.code);
  const response = await waitFor("the bid", () =>
    client.responsesTo(inbox).find((r) => r.responder === router.running.signerAddress),
  );
  return (response.data as { bid: AuctionBid }).bid;
}

/**
 * The SDK 0.1.42's payload (docs/protocol.md#auction-request), field for field, for a fresh user and transaction id.
 */
export function sdkPayload(
  s: AuctionStack,
  p: { user?: string; nowSec?: number; amount?: string } = {},
): Record<string, unknown> {
  const user = p.user ?? Wallet.createRandom().address;
  const nowSec = p.nowSec ?? Math.floor(Date.now() / 1000);
  return {
    user,
    initiator: user,
    sendingChainId: SENDING,
    sendingAssetId: s.sendingToken,
    amount: p.amount ?? "10000000000000000000",
    receivingChainId: RECEIVING,
    receivingAssetId: s.receivingToken,
    receivingAddress: user,
    callTo: "0x0000000000000000000000000000000000000000",
    callDataHash: keccak256("0x"),
    encryptedCallData: "0x",
    expiry: nowSec + 3 * 86400 + 3 * 3600,
    transactionId: hexlify(randomBytes(32)),
    dryRun: false,
  };
}

export { getAddress };

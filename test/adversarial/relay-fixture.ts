import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Wallet, ZeroAddress, getBytes, parseEther } from "ethers";
import { connect, type NatsConnection } from "nats";
import type { AuthServer } from "../../services/messaging-auth/app";
import { startAuction, type AuctionOptions, type RunningAuction } from "../../services/auction/start-auction";
import { loadConfig } from "../../shared/config";
import type { TransactionData } from "../../shared/protocol/types";
import { fulfillPayloadHash } from "../../shared/protocol/user-signatures";
import { TX_JOB, transferKey, txJobId, txQueueName } from "../../shared/queues";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { startRpcProxy, type RpcProxy } from "../harness/rpc-proxy";
import { startAuthServer } from "../harness/auth-server";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { startNats, type NatsServer } from "../harness/nats";
import { waitFor } from "../harness/wait";
import {
  RECEIVING,
  routerConfigJson,
  startE2eStack,
  startRouter,
  stopE2eStack,
  type E2eStack,
  type Router,
} from "../e2e/e2e-fixture";
import { userPrepare, waitForEvent, type UserTransfer } from "../e2e/e2e-user";
import { captureLogs, type LogCapture } from "../harness/logs";

/**
 * The relay bed of the adversarial relay tests: real contracts (e2e stack), the router's real pollers and
 * submitters, the real auction on a real nats-server, and a requester speaking the SDK's exact metatx envelope.
 * The relayer-fee threshold is at its default (10); 1338's oracle prices native and TEST alike, so a fee in TEST
 * is a gas cost in wei. The router's 1338 RPC goes through the fault tests' proxy, estimating against `latest`
 * (geth's default; anvil's own is `pending`); a test can fail its estimates (an RPC outage).
 */
export interface RelayBed {
  readonly s: E2eStack;
  readonly r: Router;
  readonly rpc: RpcProxy;
  /** The router's 1338 transaction queue (state reads, promotes). */
  readonly queue: Queue;
  readonly auctionLogs: LogCapture;
  /** Publishes a metatx request as the SDK does and waits for the router's answer. */
  ask(payload: unknown): Promise<RelayReply>;
  /** A status request as the SDK sends it; the answer's data, or undefined after `timeoutMs`. */
  askStatus(timeoutMs: number): Promise<unknown>;
  /** The request the SDK publishes for a relayed fulfill, signed by the user. */
  sdkRequest(txData: TransactionData, relayerFee: bigint): Promise<Record<string, unknown>>;
  /** A transfer prepared by the router on 1338 and stored by its poller; `bid` overrides bid fields (callTo…). */
  preparedTransfer(bid?: Record<string, unknown>): Promise<[UserTransfer, TransactionData]>;
  /** The auction's own estimate for a plain fulfill (`expectedFee` of a refusal for a fee of 1). */
  expectedFee(receiver: TransactionData): Promise<bigint>;
  /** The router signer's pending nonce and native balance on 1338: anything signed or paid moves them. */
  signerState(): Promise<{ nonce: number; balance: bigint }>;
  relayJobId(transfer: UserTransfer): string;
  stop(): Promise<void>;
}

export interface RelayReply {
  readonly data: { transactionHash?: string; chainId?: number } | null;
  readonly error: { type: string; message: string; context: Record<string, unknown> } | null;
}

export interface RelayBedOptions {
  /** False: 1338 has no price oracle configured, so a relayer fee there cannot be priced. Default true. */
  readonly priced?: boolean;
}

export async function startRelayBed(
  auctionOptions: AuctionOptions = {},
  bedOptions: RelayBedOptions = {},
): Promise<RelayBed> {
  const s = await startE2eStack();
  const [nats, auth, rpc]: [NatsServer, AuthServer, RpcProxy] = await Promise.all([
    startNats(),
    startAuthServer(),
    startRpcProxy(s.receiving.anvil.url),
  ]);
  const oracle = nxtpContractAt("ConnextPriceOracle", s.receiving.deployment.priceOracle, s.receiving.deployer);
  rpc.estimateGasAt("latest");
  await sendTx(oracle, "setDirectPrice", [ZeroAddress, parseEther("1")]);
  await sendTx(oracle, "setDirectPrice", [s.receiving.deployment.token, parseEther("1")]);

  const chainExtra = {
    [RECEIVING]: {
      providers: [rpc.url],
      ...(bedOptions.priced === false ? {} : { priceOracleAddress: s.receiving.deployment.priceOracle }),
    },
  };
  const r = await startRouter(s, { admin: false, chainExtra });
  const raw = routerConfigJson(s, r.prefix, { chainExtra }) as {
    chainConfig: Record<string, Record<string, unknown>>;
  } & Record<string, unknown>;
  raw.chainConfig[String(RECEIVING)] = { ...raw.chainConfig[String(RECEIVING)], allowRelay: true };
  const config = loadConfig({ ...raw, messagingUrl: nats.url, authUrl: auth.url, network: "local" }, {}).config;
  const auctionLogs = captureLogs();
  const auction: RunningAuction = await startAuction({
    config,
    logger: auctionLogs.logger,
    options: { warmupTimeoutMs: 10_000, ...auctionOptions },
  });

  const url = new URL(s.redisUrl);
  const queue = new Queue(txQueueName(RECEIVING), {
    connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
    prefix: r.prefix,
  });
  const messagingAddress = Wallet.createRandom().address; // the SDK's throw-away messaging signer
  const replies = new Map<string, RelayReply>();
  const client: NatsConnection = await connect({ servers: nats.url });
  for (const topic of ["metatx", "status"]) {
    client.subscribe(`${messagingAddress}.*.${topic}.response`, {
      callback: (err, msg) => {
        if (err) return;
        const envelope = JSON.parse(new TextDecoder().decode(msg.data)) as { responseInbox: string } & RelayReply;
        replies.set(envelope.responseInbox, { data: envelope.data, error: envelope.error });
      },
    });
  }
  const publish = (topic: string, payload: unknown): string => {
    const inbox = `_INBOX.${randomUUID()}`;
    client.publish(
      `${messagingAddress}.${messagingAddress}.${topic}.request`,
      JSON.stringify({ responseInbox: inbox, data: payload, version: "0.0.1", error: null }),
    );
    return inbox;
  };

  const ask = async (payload: unknown): Promise<RelayReply> => {
    const inbox = publish("metatx", payload);
    return waitFor(`metatx reply on ${inbox}`, async () => replies.get(inbox), 60_000);
  };
  const sdkRequest = async (txData: TransactionData, relayerFee: bigint): Promise<Record<string, unknown>> => {
    const fee = relayerFee.toString();
    const hash = fulfillPayloadHash({
      transactionId: txData.transactionId,
      relayerFee: fee,
      receivingChainId: txData.receivingChainId,
      receivingChainTxManagerAddress: txData.receivingChainTxManagerAddress,
    });
    return {
      type: "Fulfill",
      relayerFee: fee,
      to: s.receiving.deployment.transactionManager,
      chainId: txData.receivingChainId,
      data: { relayerFee: fee, signature: await s.user.signMessage(getBytes(hash)), txData, callData: "0x" },
    };
  };
  const store = createTransferStore(r.redis, r.prefix);

  return {
    s,
    r,
    rpc,
    queue,
    auctionLogs,
    ask,
    askStatus: async (timeoutMs) => {
      const inbox = publish("status", { requestee: s.router });
      return waitFor(`status reply on ${inbox}`, async () => replies.get(inbox)?.data ?? undefined, timeoutMs);
    },
    sdkRequest,
    preparedTransfer: async (bid = {}) => {
      const transfer = await userPrepare(s, { bid });
      const receiver = (await waitForEvent(s.receiving, "prepared", transfer.transactionId, 30_000)).txData;
      await waitFor("receiving record", async () =>
        (await store.get(RECEIVING, transfer.transactionId, transfer.txData.user))?.status === "Prepared"
          ? true
          : undefined,
      );
      return [transfer, receiver];
    },
    expectedFee: async (receiver) => {
      const probe = await ask(await sdkRequest(receiver, 1n));
      if (probe.error?.type !== "NotEnoughRelayerFeeError") {
        throw new Error(`fee probe: expected NotEnoughRelayerFeeError, got ${JSON.stringify(probe)}`);
      }
      return BigInt(probe.error.context.expectedFee as string);
    },
    signerState: async () => ({
      nonce: await s.receiving.provider.getTransactionCount(s.router, "pending"),
      balance: await s.receiving.provider.getBalance(s.router),
    }),
    relayJobId: (t) => txJobId(TX_JOB.relayFulfill, transferKey(t.transactionId, t.txData.user)),
    stop: async () => {
      await auction.stop();
      await client.close();
      await queue.close();
      await r.stop();
      await Promise.allSettled([auth.close(), nats.stop(), rpc.down()]);
      await stopE2eStack(s);
    },
  };
}

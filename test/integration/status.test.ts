import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Queue, Worker } from "bullmq";
import { Wallet, ZeroHash, getAddress, hexlify, randomBytes } from "ethers";
import { Redis } from "ioredis";
import { connect, type NatsConnection } from "nats";
import type { AuthServer } from "../../services/messaging-auth/app";
import { startAuction, type RunningAuction } from "../../services/auction/start-auction";
import { loadConfig } from "../../shared/config";
import type { PreparedTransferRecord } from "../../shared/protocol/types";
import { TX_JOB, txQueueName } from "../../shared/queues";
import { cleanUpModeKey } from "../../shared/coordination/keys";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { startAuthServer } from "../harness/auth-server";
import { getFreePort } from "../harness/free-port";
import { startNats, type NatsServer } from "../harness/nats";
import { startRedis, type RedisServer } from "../harness/redis";
import { waitFor } from "../harness/wait";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * `status.request` through the real auction process (startAuction) on real nats-server and Redis; the
 * client publishes and listens like the SDK's getRouterStatus. No chain is reachable: status needs none.
 */
const MNEMONIC = "test test test test test test test test test test test junk";
const SIGNER = new Wallet(Wallet.fromPhrase(MNEMONIC).privateKey).address;
const TOKEN_A = getAddress(hexlify(randomBytes(20)));
const TOKEN_B = getAddress(hexlify(randomBytes(20)));
const TOKEN_C = getAddress(hexlify(randomBytes(20)));
const TM = getAddress(hexlify(randomBytes(20)));
const ROUTER_CONTRACT = getAddress(hexlify(randomBytes(20)));
const VERSION = (JSON.parse(readFileSync(join(__dirname, "../../package.json"), "utf8")) as { version: string })
  .version;

describe("status.request answered by the auction process", () => {
  let redisServer: RedisServer;
  let nats: NatsServer;
  let auth: AuthServer;
  let redis: Redis;
  let client: NatsConnection;
  let deadRpc: string;
  let auction: RunningAuction | undefined;
  const queues: Queue[] = [];
  const requester = Wallet.createRandom().address;
  const replies = new Map<string, { subject: string; data: Record<string, unknown> | null }>();

  const start = async (prefix: string, topLevel: Record<string, unknown>): Promise<RunningAuction> => {
    const chain = (chainId: number): Record<string, unknown> => ({
      providers: [`${deadRpc}/${chainId}`],
      transactionManagerAddress: TM,
    });
    const raw = {
      adminToken: "status-test-admin-token",
      mnemonic: MNEMONIC,
      redisUrl: redisServer.url,
      redisPrefix: prefix,
      network: "local",
      messagingUrl: nats.url,
      authUrl: auth.url,
      chainConfig: { "1": chain(1), "1337": chain(1337), "1338": chain(1338) },
      swapPools: [
        {
          name: "A",
          assets: [
            { chainId: 1337, assetId: TOKEN_A },
            { chainId: 1338, assetId: TOKEN_B },
          ],
        },
        {
          name: "B",
          assets: [
            { chainId: 1338, assetId: TOKEN_C },
            { chainId: 1337, assetId: TOKEN_A },
          ],
        },
      ],
      ...topLevel,
    };
    return startAuction({
      config: loadConfig(raw, {}).config,
      logger: captureLogs().logger,
      options: { warmupTimeoutMs: 200 },
    });
  };

  const askStatus = async (): Promise<{ subject: string; data: Record<string, unknown> | null }> => {
    const inbox = `_INBOX.${randomUUID()}`;
    client.publish(
      `${requester}.${requester}.status.request`,
      JSON.stringify({ responseInbox: inbox, data: { requestee: requester }, version: "0.0.1", error: null }),
    );
    return waitFor(`status reply on ${inbox}`, async () => replies.get(inbox), 10_000);
  };

  const openRecord = (chainId: number): PreparedTransferRecord => ({
    status: "Prepared",
    chainId,
    encryptedCallData: "0x",
    encodedBid: "0x",
    bidSignature: "0x",
    prepareTransactionHash: ZeroHash,
    txData: {
      receivingChainTxManagerAddress: TM,
      user: Wallet.createRandom().address,
      router: SIGNER,
      initiator: SIGNER,
      sendingAssetId: TOKEN_A,
      receivingAssetId: TOKEN_B,
      sendingChainFallback: SIGNER,
      callTo: getAddress("0x" + "00".repeat(20)),
      receivingAddress: SIGNER,
      sendingChainId: 1337,
      receivingChainId: 1338,
      callDataHash: ZeroHash,
      transactionId: hexlify(randomBytes(32)),
      amount: "1",
      expiry: 2_000_000_000,
      preparedBlockNumber: 1,
    },
  });

  beforeAll(async () => {
    [redisServer, nats, auth] = await Promise.all([startRedis(), startNats(), startAuthServer()]);
    deadRpc = `http://127.0.0.1:${await getFreePort()}`;
    redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
    client = await connect({ servers: nats.url });
    client.subscribe(`${requester}.*.status.response`, {
      callback: (err, msg) => {
        if (err) return;
        const envelope = JSON.parse(new TextDecoder().decode(msg.data)) as {
          responseInbox: string;
          data: Record<string, unknown> | null;
        };
        replies.set(envelope.responseInbox, { subject: msg.subject, data: envelope.data });
      },
    });
  }, 60_000);

  afterEach(async () => {
    await auction?.stop();
    auction = undefined;
    await Promise.all(queues.splice(0).map((q) => q.close()));
  });

  afterAll(async () => {
    await client?.close();
    redis?.disconnect();
    await Promise.allSettled([auth?.close(), nats?.stop(), redisServer?.stop()]);
  });

  it("answers with the StatusResponse fields, counting queued jobs and open transfer sides from Redis", async () => {
    const prefix = uniquePrefix();
    const connection = { host: redisServer.host, port: redisServer.port, maxRetriesPerRequest: null };
    const [q1337, q1338] = [
      new Queue(txQueueName(1337), { connection, prefix }),
      new Queue(txQueueName(1338), { connection, prefix }),
    ];
    queues.push(q1337, q1338);
    // No submitter runs: a job in each unfinished state is what the tracker counts (the auction reads the
    // queue's keys without BullMQ, so BullMQ's own count is the reference). The active one is taken by hand.
    await q1337.add(TX_JOB.removeLiquidity, { chainId: 1337 }, { jobId: "status-active" });
    const taker = new Worker(txQueueName(1337), null, { connection, prefix, autorun: false });
    expect((await taker.getNextJob("status-test-token"))?.id).toBe("status-active");
    await taker.close();
    await q1337.add(TX_JOB.removeLiquidity, { chainId: 1337 }, { jobId: "status-waiting" });
    await q1337.add(TX_JOB.removeLiquidity, { chainId: 1337 }, { jobId: "status-prioritized", priority: 5 });
    await q1338.add(TX_JOB.removeLiquidity, { chainId: 1338 }, { jobId: "status-delayed", delay: 600_000 });
    const counted = await Promise.all(
      [q1337, q1338].map((q) => q.getJobCounts("waiting", "active", "delayed", "prioritized")),
    );
    expect(counted).toEqual([
      { waiting: 1, active: 1, delayed: 0, prioritized: 1 },
      { waiting: 0, active: 0, delayed: 1, prioritized: 0 },
    ]);
    const store = createTransferStore(redis, prefix);
    const sender = openRecord(1337);
    await store.put(sender);
    await store.put({ ...sender, chainId: 1338 });
    await store.put(openRecord(1337));
    await store.put({
      ...openRecord(1338),
      status: "Fulfilled",
      signature: "0x",
      relayerFee: "0",
      callData: "0x",
      fulfillTransactionHash: ZeroHash,
    });

    auction = await start(prefix, { cleanUpMode: true });
    const reply = await askStatus();
    expect(reply.subject).toBe(`${requester}.${SIGNER}.status.response`);
    expect(reply.data).toEqual({
      isRouterContract: false,
      routerVersion: VERSION,
      routerAddress: SIGNER,
      signerAddress: SIGNER,
      trackerLength: 4,
      activeTransactionsLength: 3,
      swapPools: { "1337": [TOKEN_A], "1338": [TOKEN_B, TOKEN_C] },
      supportedChains: [1337, 1338],
      cleanUpMode: true,
      diagnosticMode: false,
    });
  }, 60_000);

  it("reports cleanUpMode while npm run drain's switch is in Redis, and not once it is removed", async () => {
    const prefix = uniquePrefix();
    auction = await start(prefix, {});
    expect((await askStatus()).data).toMatchObject({ cleanUpMode: false });
    await redis.set(cleanUpModeKey(prefix), JSON.stringify({ sinceMs: Date.now() }));
    expect((await askStatus()).data).toMatchObject({ cleanUpMode: true });
    await redis.del(cleanUpModeKey(prefix));
    expect((await askStatus()).data).toMatchObject({ cleanUpMode: false });
  }, 60_000);

  it("answers in diagnosticMode too, naming the Router contract as the router", async () => {
    auction = await start(uniquePrefix(), { diagnosticMode: true, routerContractAddress: ROUTER_CONTRACT });
    const reply = await askStatus();
    expect(reply.data).toMatchObject({
      isRouterContract: true,
      routerAddress: ROUTER_CONTRACT,
      signerAddress: SIGNER,
      trackerLength: 0,
      activeTransactionsLength: 0,
      cleanUpMode: false,
      diagnosticMode: true,
    });
  }, 60_000);
});

import { Queue, QueueEvents } from "bullmq";
import { Wallet, parseEther } from "ethers";
import { Redis } from "ioredis";
import { toErrorResponse } from "../../services/admin/errors";
import { createRemoveLiquidityOperation } from "../../services/admin/operations/remove-liquidity";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import { TX_JOB, producerConnection, transferKey, txJobId, txQueueName } from "../../shared/queues";
import { replicationGuard } from "../../shared/coordination/replication";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createBidReservations } from "../../shared/transfers/bid-reservations";
import { liveChildPids } from "../harness/child-process";
import { startSentinelGroup, type SentinelGroup } from "../harness/redis-sentinel";
import {
  RECEIVING,
  SENDING,
  auctionConfig,
  sdkPayload,
  startAuctionStack,
  startClient,
  startInstance,
  type AuctionInstance,
  type AuctionStack,
  type Client,
} from "./auction-fixture";
import {
  CHAIN_ID,
  startSubmitterStack,
  submitterConfig,
  txQueueClient,
  type SubmitterStack,
  type TxQueueClient,
} from "./submitter-fixture";
import { waitFor } from "../harness/wait";
import { randomMnemonic } from "../harness/mnemonic";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/**
 * `redis.minReplicas: 1` against a real primary, one replica and three sentinels (test/harness/redis-sentinel.ts).
 * The replica is frozen with SIGSTOP, so it acknowledges nothing while the primary keeps taking writes: a
 * submitter job must broadcast nothing (the signer's pending nonce count on chain stays) and, once the replica
 * runs again, send its one stored transaction exactly once; an auction must send no bid and withdraw the
 * reservation it made.
 */

// Shortened from the 1000 ms default so each refused attempt takes a fraction of a second; still far above a
// loopback replica's acknowledgement (well under 1 ms).
const ACK_TIMEOUT_MS = 300;

describe("redis.minReplicas: nothing moves on writes the replica has not acknowledged", () => {
  let group: SentinelGroup;
  let primaryUrl: string;
  let replicaPid: number;
  let frozen = false;
  const freeze = (): void => {
    process.kill(replicaPid, "SIGSTOP");
    frozen = true;
  };
  const thaw = (): void => {
    if (frozen) {
      process.kill(replicaPid, "SIGCONT");
      frozen = false;
    }
  };
  const withReplicas = (config: RouterConfig): RouterConfig => ({
    ...config,
    redisUrl: undefined,
    redis: group.config,
    redisReplication: { minReplicas: 1, ackTimeoutMs: ACK_TIMEOUT_MS },
  });

  beforeAll(async () => {
    group = await startSentinelGroup({ replicas: 1, sentinels: 3 });
    const primaryPort = await group.primaryPort();
    primaryUrl = `redis://127.0.0.1:${primaryPort}`;
    const replica = [...group.nodes].find(([port]) => port !== primaryPort)?.[1];
    if (!replica) throw new Error("sentinel group without a replica");
    replicaPid = replica.pid;
  }, 60_000);

  afterEach(() => thaw());

  afterAll(async () => {
    thaw();
    await group?.stop();
    expect(liveChildPids()).toEqual([]);
  });

  describe("submitter", () => {
    let s: SubmitterStack;
    let client: TxQueueClient | undefined;
    let submitter: RunningSubmitter | undefined;

    beforeAll(async () => {
      s = await startSubmitterStack();
    }, 120_000);

    afterAll(async () => {
      await submitter?.stop();
      await client?.close();
      await s?.stack.stop();
    });

    it("holds a job's broadcast while the replica is frozen, then sends its one stored transaction once", async () => {
      const prefix = uniquePrefix();
      const raw = submitterConfig(s, prefix).raw;
      delete raw.redisUrl;
      raw.redis = { ...group.config, minReplicas: 1, replicaAckTimeoutMs: ACK_TIMEOUT_MS };
      const config = loadConfig(raw, {}).config;
      expect(config.redisReplication).toEqual({ minReplicas: 1, ackTimeoutMs: ACK_TIMEOUT_MS });
      client = await txQueueClient(primaryUrl, prefix);
      const logs = captureLogs();
      // Shortened polls (default 1 s) so the mined receipt is seen quickly.
      submitter = await startSubmitter({
        config,
        logger: logs.logger,
        chainId: CHAIN_ID,
        // Shortened polls (default 1 s): the case waits on one mined receipt after the replica resumes; the waits
        // that matter here (replica acknowledgement, the 1 s park) are the shipped ones.
        options: { pollIntervalMs: 50, providerOptions: { headRefreshMs: 500 } },
      });
      const pendingBefore = await s.chain.provider.getTransactionCount(s.signer, "pending");

      freeze();
      const job = await client.addRemoveLiquidity({
        assetId: s.chain.deployment.token,
        amount: "1",
        recipientAddress: Wallet.createRandom().address,
      });
      const jobId = job.id ?? "";
      const held = (): Array<Record<string, unknown>> =>
        logs
          .find("submitter.job")
          .filter((l) => l.jobId === jobId && l.outcome === "delayed" && l.code === "REDIS_NOT_REPLICATED");
      // Two refused runs: the first signs and stores the transaction, the second resumes it (rebroadcast path).
      await waitFor("two runs held for the frozen replica", () => held().length >= 2, 20_000);
      const stored = await client.record(jobId);
      expect(stored?.attempts).toHaveLength(1);
      const signed = stored?.attempts[0]?.hash ?? "";
      await expect(s.chain.provider.getTransactionCount(s.signer, "pending")).resolves.toBe(pendingBefore);
      await expect(s.chain.provider.getTransaction(signed)).resolves.toBeNull();
      expect(client.progress.get(jobId) ?? []).toEqual([]);

      thaw();
      const result = await job.waitUntilFinished(client.events, 30_000);
      expect(result.transactionHash).toBe(signed);
      await expect(s.chain.provider.getTransactionCount(s.signer, "latest")).resolves.toBe(pendingBefore + 1);
      await expect(client.record(jobId)).resolves.toMatchObject({ status: "confirmed", attempts: [{ hash: signed }] });
      const broadcasts = logs.find("submitter.send", "transaction broadcast");
      expect(broadcasts.map((l) => l.transactionHash)).toEqual([signed]);
    }, 60_000);
  });

  it("admin remove-liquidity: 503 redis_not_replicated and nothing enqueued while the replica is frozen", async () => {
    const prefix = uniquePrefix();
    const connection = producerConnection(primaryUrl);
    const queue = new Queue(txQueueName(CHAIN_ID), { connection, prefix });
    const events = new QueueEvents(txQueueName(CHAIN_ID), {
      connection: { ...connection, maxRetriesPerRequest: null },
      prefix,
    });
    const redis = new Redis({ ...connection, enableOfflineQueue: true });
    try {
      const operation = createRemoveLiquidityOperation({
        queueFor: () => queue,
        queueEventsFor: () => events,
        readUnlockedBalance: async () => 10n ** 24n,
        redis,
        redisPrefix: prefix,
        replication: replicationGuard(redis, prefix, { minReplicas: 1, ackTimeoutMs: ACK_TIMEOUT_MS }),
        // Shortened (30 s default): the route answers 503 before any broadcast here, so only a bug would wait.
        broadcastTimeoutMs: 1_000,
        logger: captureLogs().logger,
      });
      const request = {
        chainId: CHAIN_ID,
        assetId: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
        amount: "1000",
        recipientAddress: Wallet.createRandom().address,
      };
      freeze();
      const err = await operation(request, { requestId: "req-frozen" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(toErrorResponse(err, "req-frozen", (t) => t)).toMatchObject({
        status: 503,
        body: { error: "redis_not_replicated" },
      });
      await expect(queue.getJob(txJobId(TX_JOB.removeLiquidity, "req-frozen"))).resolves.toBeUndefined();
      // The content claim was dropped: an identical request may go ahead once the replica is back.
      await expect(redis.keys(`${prefix}:router:remove-liquidity*`)).resolves.toEqual([]);
      thaw();
      // Accepted now: it reaches the queue (no submitter runs here, so the broadcast wait itself times out).
      await operation(request, { requestId: "req-thawed" }).catch(() => undefined);
      await expect(queue.getJob(txJobId(TX_JOB.removeLiquidity, "req-thawed"))).resolves.toBeDefined();
    } finally {
      await events.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      redis.disconnect();
    }
  }, 30_000);

  describe("auction", () => {
    let as: AuctionStack;
    let instance: AuctionInstance | undefined;
    let user: Client | undefined;
    let primary: Redis;

    beforeAll(async () => {
      as = await startAuctionStack();
      primary = new Redis(primaryUrl);
    }, 120_000);

    afterAll(async () => {
      await user?.close();
      await instance?.running.stop();
      primary?.disconnect();
      await as?.stop();
    });

    it("sends no bid while the replica is frozen; sends the reserved bid once it runs again", async () => {
      const prefix = uniquePrefix();
      // No rate limit: the refused request's cold retries must meet the replica again, not the rate stamp.
      const config = withReplicas(auctionConfig(as, { prefix, mnemonic: randomMnemonic(), requestLimit: 0 }));
      const balances = createBalanceStore(primary, prefix);
      await balances.setRouterBalance(RECEIVING, as.receivingToken, parseEther("1000000"));
      await balances.setGasBalance(SENDING, parseEther("10"));
      await balances.setGasBalance(RECEIVING, parseEther("10"));
      const auction = await startInstance({ config });
      instance = auction;
      user = await startClient(as);
      const warm = user.request(sdkPayload(as));
      await user.responseTo(warm, 20_000);

      freeze();
      const payload = sdkPayload(as);
      const inbox = user.request(payload);
      const mine = (l: Record<string, unknown>): boolean => l.transactionId === payload.transactionId;
      // The reservation was made (its promise is in Redis), then the replica wait refused the bid: a cold refusal,
      // retried within the requester's window (4 s by default).
      const refusedLine = await waitFor("the first refusal of the frozen request", () =>
        auction.logs.find("auction.cold").find(mine),
      );
      expect(refusedLine).toMatchObject({ code: "StoreNotReplicated" });
      const promises = await createBidReservations(primary, prefix).promises(RECEIVING, as.receivingToken);
      const key = transferKey(String(payload.transactionId), String(payload.user)).toLowerCase();
      expect([...promises.byTransfer.keys()]).toContain(key);
      expect(user.responsesTo(inbox)).toEqual([]);

      thaw();
      // A retry in the window re-sends the reserved bid (the claim holds it; nothing is reserved twice).
      const response = await user.responseTo(inbox, 10_000);
      expect(response.data).toMatchObject({ bid: { transactionId: payload.transactionId } });
      const outcome = await waitFor("the frozen request's outcome", () => auction.outcomes().find(mine));
      expect(outcome).toMatchObject({ result: "bid", code: "ok", resent: true });
      expect(user.responsesTo(inbox)).toHaveLength(1);
      const again = await createBidReservations(primary, prefix).promises(RECEIVING, as.receivingToken);
      expect(again.byTransfer.get(key)).toBe(promises.byTransfer.get(key));
    }, 60_000);
  });
});

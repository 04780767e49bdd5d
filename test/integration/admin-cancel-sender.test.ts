import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ZeroHash, hexlify } from "ethers";
import { Redis } from "ioredis";
import { createApp } from "../../services/admin/app";
import { createChainQueues, type ChainQueues } from "../../services/admin/chain-queues";
import { closeServer, listen } from "../../services/admin/listen";
import { createCancelSenderOperation, type CancelSenderDeps } from "../../services/admin/operations/cancel-sender";
import { createChainProvider, type ChainProvider } from "../../shared/chain/chain-provider";
import { transferDecisionKey } from "../../shared/coordination/keys";
import { completedVariantDigest } from "../../shared/protocol/digests";
import { TX_JOB, TX_JOB_DEFAULTS, producerConnection, txJobId } from "../../shared/queues";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import { liveChildPids } from "../harness/child-process";
import { waitFor } from "../harness/wait";
import {
  DAY,
  EXPIRY_OFFSET_SEC,
  RECEIVING,
  SENDING,
  drainRouterLiquidity,
  increaseTime,
  keyOf,
  makeTransfer,
  pendingNonce,
  receiverTxData,
  routerOf,
  startLifecycleStack,
  startRun,
  tokenBalance,
  userFulfill,
  variantOf,
  type LifecycleRun,
  type LifecycleStack,
  type RouterMode,
  type Transfer,
} from "./lifecycle-fixture";

/** The receiving chain's confirmations in the reverted-prepare tests: a revert is final two blocks after its own. */
const RECEIVING_CONFIRMATIONS = 3;

/** POST /cancel-sender through the real Express app, real Redis queues, real chains and in-process submitters. */
describe("admin POST /cancel-sender (real app, redis, anvil, submitters)", () => {
  let s: LifecycleStack;
  let run: LifecycleRun | undefined;
  let admin: { baseUrl: string; close(): Promise<void> } | undefined;

  interface Reply {
    readonly status: number;
    readonly body: Record<string, unknown>;
  }

  const startAdmin = async (
    mode: RouterMode,
    deps: Partial<CancelSenderDeps> = {},
    runOptions: { receivingConfirmations?: number } = {},
  ): Promise<LifecycleRun> => {
    const r = await startRun(s, mode, runOptions);
    run = r;
    const { config, logs } = r;
    const queues: ChainQueues = createChainQueues(config, logs.logger);
    const providers = new Map<number, ChainProvider>(
      [SENDING, RECEIVING].map((chainId) => [
        chainId,
        createChainProvider({ chainId, urls: config.chainConfig[String(chainId)].providers, logger: logs.logger }),
      ]),
    );
    const redis = new Redis({ ...producerConnection(config.redis), enableOfflineQueue: true });
    const transfers = createTransferStore(redis, config.redisPrefix);
    const cancelSender = createCancelSenderOperation({
      config,
      routerAddress: routerOf(s, mode),
      queueFor: queues.queueFor,
      queueEventsFor: queues.queueEventsFor,
      redis,
      readProvider: (chainId) => providers.get(chainId) as ChainProvider,
      findTransfer: (chainId, transactionId, user) => transfers.get(chainId, transactionId, user),
      broadcastTimeoutMs: 20_000,
      logger: logs.logger,
      ...deps,
    });
    const app = createApp({
      config,
      logger: logs.logger,
      signerAddress: s.signerAddress,
      operations: { removeLiquidity: () => Promise.reject(new Error("not used here")), cancelSender },
    });
    const server: Server = await listen(app, "127.0.0.1", 0);
    admin = {
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: async () => {
        await closeServer(server);
        await queues.close();
        redis.disconnect();
        providers.forEach((p) => p.destroy());
      },
    };
    return r;
  };

  const post = async (body: Record<string, unknown>, requestId?: string): Promise<Reply> => {
    const res = await fetch(`${admin?.baseUrl}/cancel-sender`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(requestId ? { "x-request-id": requestId } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const cancelBody = (r: LifecycleRun, t: Transfer, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    adminToken: r.config.adminToken,
    senderChainId: SENDING,
    transactionId: t.txData.transactionId,
    user: t.txData.user,
    ...extra,
  });
  const prepareReceiver = async (r: LifecycleRun, t: Transfer) =>
    receiverTxData(
      s,
      await r.finish(
        await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t)),
      ),
    );
  const cancelJob = (r: LifecycleRun, t: Transfer) =>
    r.queues.get(SENDING)?.getJob(txJobId(TX_JOB.cancelSender, keyOf(t)));
  const senderCancelled = async (t: Transfer): Promise<boolean> =>
    (await variantOf(s.sending, t.txData)) === completedVariantDigest(t.txData.amount, t.txData.expiry);
  const decisionOf = (r: LifecycleRun, t: Transfer) => r.redis.get(transferDecisionKey(r.prefix, keyOf(t)));
  const jobLogs = (r: LifecycleRun, jobId: string | undefined) => r.logs.lines().filter((l) => l.jobId === jobId);

  /**
   * The transfer's receiving prepare broadcast with the receiving chain not mining, then mined reverted (the router's
   * liquidity gone when its block is mined, as in test/adversarial/reverted-prepare-refund.test.ts). Before the
   * revert, asks once: a prepare in flight is a receiving side on its way (409 receiver_live).
   */
  const revertedPrepare = async (r: LifecycleRun, t: Transfer, router: string): Promise<void> => {
    await s.receiving.anvil.setAutomine(false);
    const prepare = await r.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t));
    await waitFor("the receiving prepare's broadcast", async () =>
      jobLogs(r, prepare.id).some((l) => l.message === "transaction broadcast") ? true : undefined,
    );
    expect(await post(cancelBody(r, t))).toMatchObject({
      status: 409,
      body: {
        error: "receiver_live",
        message: expect.stringMatching(/prepare-receiver job .* (is active|has a sending transaction)/),
      },
    });
    const restoreLiquidity = await drainRouterLiquidity(s.receiving, router);
    await s.receiving.anvil.mine(1);
    await expect(r.finish(prepare)).rejects.toThrow(/^TRANSACTION_REVERTED: /);
    await restoreLiquidity();
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);
    expect(await decisionOf(r, t)).toBe("prepare");
  };

  /**
   * The refund the failed prepare enqueues itself, once it ran, taken away: the gap the admin route closes is a
   * transfer whose lifecycle refund is gone (failed for good, or never enqueued: a crash, a Redis failover).
   */
  const dropLifecycleRefund = async (r: LifecycleRun, t: Transfer): Promise<void> => {
    const refund = await waitFor("the lifecycle's refund job", async () => (await cancelJob(r, t)) ?? undefined);
    await waitFor("the lifecycle's refund run once", async () =>
      jobLogs(r, refund.id).some((l) => l.outcome !== undefined) ? true : undefined,
    );
    // Removed between two runs (a job the submitter holds is locked: 0 then).
    await waitFor("the lifecycle's refund removed", async () =>
      (await r.queues.get(SENDING)?.remove(refund.id ?? "")) === 1 ? true : undefined,
    );
    expect(jobLogs(r, refund.id).filter((l) => l.message === "transaction broadcast")).toEqual([]);
  };

  beforeAll(async () => {
    s = await startLifecycleStack();
  });

  afterEach(async () => {
    await s.receiving.anvil.setAutomine(true);
    await admin?.close();
    await run?.stop();
    admin = undefined;
    run = undefined;
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("401 for a wrong token, 404 for an unknown transaction", async () => {
    const r = await startAdmin("direct");
    const t = await makeTransfer(s, { mode: "direct" });
    const unauthorized = await post(cancelBody(r, t, { adminToken: "wrong-token-0123456789" }));
    expect(unauthorized).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    const unknown = await post(cancelBody(r, t, { transactionId: hexlify(randomBytes(32)) }));
    expect(unknown).toMatchObject({ status: 404, body: { error: "transaction_not_found" } });
    expect(await senderCancelled(t)).toBe(false);
  });

  it("409 receiver_live while the receiving side is being prepared or prepared and live; nothing is enqueued", async () => {
    const r = await startAdmin("direct");
    const t = await makeTransfer(s, { mode: "direct" });
    await increaseTime(s, 800);
    // A prepare-receiver job that can still run (here: delayed) counts as a receiving side on its way.
    const pending = await r.queues.get(RECEIVING)?.add(
      TX_JOB.prepareReceiver,
      { chainId: RECEIVING, sender: t.sender },
      {
        ...TX_JOB_DEFAULTS,
        jobId: txJobId(TX_JOB.prepareReceiver, keyOf(t)),
        delay: 60_000,
      },
    );
    const beingPrepared = await post(cancelBody(r, t));
    expect(beingPrepared).toMatchObject({
      status: 409,
      body: { error: "receiver_live", message: expect.stringMatching(/prepare-receiver job .* is delayed/) },
    });
    await pending?.promote();
    await r.finish(pending ?? (await Promise.reject(new Error("no job"))));

    const live = await post(cancelBody(r, t));
    expect(live).toMatchObject({
      status: 409,
      body: { error: "receiver_live", message: expect.stringMatching(/prepared and live/) },
    });
    expect(await cancelJob(r, t)).toBeUndefined();
    expect(await senderCancelled(t)).toBe(false);
  });

  it("200 {transactionHash} once the receiving side is cancelled: the router cancels the sender before its expiry", async () => {
    const r = await startAdmin("router-contract");
    const t = await makeTransfer(s, { mode: "router-contract" });
    const receiver = await prepareReceiver(r, t);
    await increaseTime(s, EXPIRY_OFFSET_SEC - DAY + 60); // receiving side expired, sending side still live
    await r.finish(
      await r.add(RECEIVING, TX_JOB.cancelReceiver, { chainId: RECEIVING, txData: receiver, reason: "test" }, keyOf(t)),
    );

    const reply = await post(cancelBody(r, t), "admin-cancel-1");
    expect(reply).toMatchObject({ status: 200, body: { transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) } });
    const job = await cancelJob(r, t);
    expect(job?.data).toMatchObject({ chainId: SENDING, reason: "admin", force: false, requestId: "admin-cancel-1" });
    await r.finish(job ?? (await Promise.reject(new Error("no job"))));
    expect(await senderCancelled(t)).toBe(true);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
    const tx = await s.sending.provider.getTransaction(String(reply.body.transactionHash));
    expect(tx).toMatchObject({ from: s.signerAddress, to: s.routerContract });

    // Asked again: the transfer's job is reused and its hash is the answer.
    expect(await post(cancelBody(r, t))).toEqual({ status: 200, body: reply.body });
  });

  it("409 receiver_fulfilled after the user was paid, 409 sender_not_prepared once the sender is claimed", async () => {
    const r = await startAdmin("direct");
    const t = await makeTransfer(s, { mode: "direct" });
    const receiver = await prepareReceiver(r, t);
    const fulfilled = await userFulfill(s, receiver);
    await increaseTime(s, 800);
    expect(await post(cancelBody(r, t))).toMatchObject({ status: 409, body: { error: "receiver_fulfilled" } });

    const claim = {
      chainId: SENDING,
      txData: t.txData,
      signature: fulfilled.signature,
      relayerFee: "0",
      callData: "0x",
      receiverFulfillTransactionHash: fulfilled.transactionHash,
    };
    await r.finish(await r.add(SENDING, TX_JOB.fulfillSender, claim, keyOf(t)));
    expect(await post(cancelBody(r, t))).toMatchObject({ status: 409, body: { error: "sender_not_prepared" } });
    expect(await cancelJob(r, t)).toBeUndefined();
  });

  it("409 sender_too_new within 780 s of the sending prepare", async () => {
    const r = await startAdmin("direct");
    const t = await makeTransfer(s, { mode: "direct" });
    expect(await post(cancelBody(r, t))).toMatchObject({ status: 409, body: { error: "sender_too_new" } });
  });

  // This test used to assert that force cancels a sending side whose receiving side the router
  // had prepared and which was live, i.e. the router losing the amount on purpose. A recorded receiving prepare
  // is now never overridden; force keeps skipping the other checks (here the 780 s rule).
  it("force: true never overrides a recorded receiving prepare (409 receiver_prepare_decided), but skips the other checks", async () => {
    const r = await startAdmin("direct");
    const prepared = await makeTransfer(s, { mode: "direct" });
    await prepareReceiver(r, prepared);
    const refused = await post(cancelBody(r, prepared, { force: true }), "forced-cancel-0");
    expect(refused).toMatchObject({
      status: 409,
      body: { error: "receiver_prepare_decided", message: expect.stringMatching(/force.* does not override/) },
    });
    expect(await cancelJob(r, prepared)).toBeUndefined();
    expect(await senderCancelled(prepared)).toBe(false);

    const t = await makeTransfer(s, { mode: "direct" });
    expect(await post(cancelBody(r, t))).toMatchObject({ status: 409, body: { error: "sender_too_new" } });
    const reply = await post(cancelBody(r, t, { force: true }), "forced-cancel-1");
    expect(reply).toMatchObject({ status: 200, body: { transactionHash: expect.stringMatching(/^0x/) } });
    await r.finish((await cancelJob(r, t)) ?? (await Promise.reject(new Error("no job"))));
    expect(await senderCancelled(t)).toBe(true);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
    const warnings = r.logs.lines().filter((l) => l.level === "warn" && /FORCED/.test(String(l.message)));
    expect(warnings).toContainEqual(
      expect.objectContaining({ at: "admin.cancelSender", requestId: "forced-cancel-1" }),
    );
    expect(warnings).toContainEqual(
      expect.objectContaining({ at: "submitter.cancelSender", requestId: "forced-cancel-1" }),
    );
  });

  it("after a receiving prepare mined reverted: 409 receiver_prepare_revert_not_final until the revert is confirmations deep, then 200 and the sender refunded", async () => {
    const r = await startAdmin("direct", {}, { receivingConfirmations: RECEIVING_CONFIRMATIONS });
    const t = await makeTransfer(s, { mode: "direct" });
    await increaseTime(s, 800);
    const sendingNonce = await pendingNonce(s, s.sending);
    await revertedPrepare(r, t, s.signerAddress);
    await dropLifecycleRefund(r, t);

    // One block deep, then two: refused as not final, forced or not, nothing enqueued or sent.
    for (const depth of [1, 2]) {
      for (const force of [false, true]) {
        expect(await post(cancelBody(r, t, { force }))).toMatchObject({
          status: 409,
          body: {
            error: "receiver_prepare_revert_not_final",
            message: expect.stringContaining(`reverted ${depth} of ${RECEIVING_CONFIRMATIONS} blocks deep`),
          },
        });
      }
      expect(await cancelJob(r, t)).toBeUndefined();
      await s.receiving.anvil.mine(1);
    }
    expect(await pendingNonce(s, s.sending)).toBe(sendingNonce);
    expect(await decisionOf(r, t)).toBe("prepare");

    const reply = await post(cancelBody(r, t), "admin-cancel-reverted");
    expect(reply).toMatchObject({ status: 200, body: { transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) } });
    await r.finish((await cancelJob(r, t)) ?? (await Promise.reject(new Error("no job"))));
    expect(await senderCancelled(t)).toBe(true);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(BigInt(t.txData.amount));
    expect(await variantOf(s.receiving, t.txData)).toBe(ZeroHash);
    expect(await decisionOf(r, t)).toBe("cancel-sender");
    expect(await pendingNonce(s, s.sending)).toBe(sendingNonce + 1);
    const tx = await s.sending.provider.getTransaction(String(reply.body.transactionHash));
    expect(tx).toMatchObject({ from: s.signerAddress, to: s.sending.deployment.transactionManager });
  });

  it("a reverted Router contract prepare stays 409 receiver_prepare_decided, forced or not: its signature can be relayed again", async () => {
    const r = await startAdmin("router-contract", {}, { receivingConfirmations: RECEIVING_CONFIRMATIONS });
    const t = await makeTransfer(s, { mode: "router-contract" });
    await increaseTime(s, 800);
    await revertedPrepare(r, t, s.routerContract);
    await dropLifecycleRefund(r, t);
    await s.receiving.anvil.mine(RECEIVING_CONFIRMATIONS);

    for (const force of [false, true]) {
      expect(await post(cancelBody(r, t, { force }))).toMatchObject({
        status: 409,
        body: { error: "receiver_prepare_decided", message: expect.stringMatching(/called the Router contract/) },
      });
    }
    expect(await cancelJob(r, t)).toBeUndefined();
    expect(await senderCancelled(t)).toBe(false);
    expect(await decisionOf(r, t)).toBe("prepare");
  });

  it("finds the sending side in the transfer store when the log lookback cannot reach it", async () => {
    const r = await startAdmin("direct", { senderLookbackBlocks: 1 });
    const t = await makeTransfer(s, { mode: "direct" });
    await s.sending.anvil.mine(3);
    await increaseTime(s, 800);
    expect(await post(cancelBody(r, t))).toMatchObject({ status: 404, body: { error: "transaction_not_found" } });

    const redis = new Redis({ ...producerConnection(r.config.redis), enableOfflineQueue: true });
    try {
      await createTransferStore(redis, r.config.redisPrefix).put({ ...t.sender, status: "Prepared" });
    } finally {
      redis.disconnect();
    }
    expect(await post(cancelBody(r, t))).toMatchObject({
      status: 200,
      body: { transactionHash: expect.stringMatching(/^0x/) },
    });
  });
});

import { Wallet, hexlify, randomBytes } from "ethers";
import type { TransferEvent } from "../../shared/chain/tm-log-decoder";
import { TX_JOB, txJobId, type CancelSenderJobData, type TxJobName } from "../../shared/queues";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { ANVIL_MNEMONIC } from "../harness/anvil";
import { liveChildPids } from "../harness/child-process";
import { startSubgraphServer, type SubgraphServer } from "../harness/subgraph-server";
import {
  ADMIN_TOKEN,
  AMOUNT,
  CHAIN1,
  DAY,
  RECEIVING,
  SENDING,
  postAdmin,
  startE2eStack,
  startRouter,
  stopE2eStack,
  type E2eStack,
  type Router,
} from "./e2e-fixture";
import {
  increaseTime,
  isCompleted,
  latestTimestamp,
  routerLiquidity,
  senderOf,
  startBlockClock,
  tokenBalance,
  transferEvents,
  userCancelReceiver,
  userFulfill,
  userPrepare,
  waitForEvent,
  type PrepareParams,
  type UserTransfer,
} from "./e2e-user";
import { waitFor } from "../harness/wait";

const anotherKey = createMnemonicSigner(ANVIL_MNEMONIC); // anvil account 0: not the router signer
const jobId = (name: TxJobName, t: UserTransfer): string => txJobId(name, t.key);
const preparedCount = async (t: UserTransfer, chain: E2eStack["receiving"]): Promise<number> =>
  (await transferEvents(chain, "prepared", t.transactionId)).length;

describe("e2e: pollers, submitters and admin API live on redis + anvil 1 / 1337 / 1338", () => {
  let s: E2eStack;
  let r: Router | undefined;
  const servers: SubgraphServer[] = [];
  const running = (): Router =>
    r ??
    (() => {
      throw new Error("router not started");
    })();

  beforeAll(async () => {
    s = await startE2eStack();
  }, 120_000);

  afterEach(async () => {
    await r?.stop();
    r = undefined;
  });

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await stopE2eStack(s);
    expect(liveChildPids()).toEqual([]);
  });

  /** Waits until the chain's poller stored a head whose records are complete past `block`. */
  const syncedPast = (chainId: number, block: number) =>
    waitFor(`poller ${chainId} past ${block}`, async () =>
      ((await running().getHead(chainId))?.syncedBlock ?? -1) >= block ? true : undefined,
    );

  /** Mines a block and waits until the chain's poller synced past it: a whole poller tick ran after this call. */
  const nextPollerTick = async (chainId: number): Promise<void> => {
    const chain = chainId === SENDING ? s.sending : s.receiving;
    await chain.anvil.mine(1);
    await syncedPast(chainId, await chain.provider.getBlockNumber());
  };

  const enqueued = (): unknown[][] =>
    running()
      .logs.lines()
      .filter((l) => l.at === "poller.enqueue")
      .map((l) => [l.action, l.source]);

  /**
   * The happy path (docs/protocol.md#lifecycle) with nothing enqueued by the test; returns ms from the sending
   * prepare's block to the receiving prepare's.
   */
  async function happyPath(): Promise<number> {
    const router = running();
    const before = [
      await tokenBalance(s.sending, s.user.address),
      await tokenBalance(s.receiving, s.user.address),
      await routerLiquidity(s, s.sending),
      await routerLiquidity(s, s.receiving),
    ];
    const clock = await startBlockClock([s.sending, s.receiving]);
    const [t, prepared, latencyMs] = await (async (): Promise<[UserTransfer, TransferEvent, number]> => {
      const sent = await userPrepare(s);
      const event = await waitForEvent(s.receiving, "prepared", sent.transactionId);
      return [
        sent,
        event,
        (await clock.seenAtMs(RECEIVING, event.blockNumber)) - (await clock.seenAtMs(SENDING, sent.blockNumber)),
      ];
    })().finally(() => clock.stop());
    const amountReceived = BigInt(t.bid.amountReceived);

    expect(prepared.txData).toEqual({
      ...t.txData,
      amount: t.bid.amountReceived,
      expiry: t.txData.expiry - DAY,
      preparedBlockNumber: prepared.blockNumber,
    });
    expect(await senderOf(s.receiving, prepared)).toBe(s.router);
    expect(await routerLiquidity(s, s.receiving)).toBe(before[3] - amountReceived);

    await userFulfill(s, prepared.txData);
    const claimed = await waitForEvent(s.sending, "fulfilled", t.transactionId);
    expect(await senderOf(s.sending, claimed)).toBe(s.router);
    await router.idle(SENDING);
    await router.idle(RECEIVING);
    const after = [
      await tokenBalance(s.sending, s.user.address),
      await tokenBalance(s.receiving, s.user.address),
      await routerLiquidity(s, s.sending),
      await routerLiquidity(s, s.receiving),
    ];
    expect(after).toEqual([
      before[0] - AMOUNT,
      before[1] + amountReceived,
      before[2] + AMOUNT,
      before[3] - amountReceived,
    ]);
    expect([await isCompleted(s.sending, t.txData), await isCompleted(s.receiving, prepared.txData)]).toEqual([
      true,
      true,
    ]);
    expect(await router.jobIds(RECEIVING)).toEqual([jobId(TX_JOB.prepareReceiver, t)]);
    expect(await router.jobIds(SENDING)).toEqual([jobId(TX_JOB.fulfillSender, t)]);
    // Detection on the next poll, not on the 10 s idle tick.
    expect(latencyMs).toBeLessThan(3_000);
    return latencyMs;
  }

  it("1. happy path, logs source: the router prepares 1338 by itself, the user fulfills, the router claims on 1337", async () => {
    r = await startRouter(s);
    // Every process serves the same router.
    expect(await (await fetch(`${r.adminUrl}/config`)).json()).toEqual({ signerAddress: s.router });
    const latencyMs = await happyPath();
    console.log(
      `e2e prepare latency (logs source): ${latencyMs} ms from the sending prepare's block to the receiving prepare's block`,
    );
    expect(enqueued()).toEqual([
      ["prepare-receiver", "logs"],
      ["fulfill-sender", "logs"],
    ]);
  });

  it("2. happy path, subgraph source", async () => {
    for (const c of [s.sending, s.receiving]) {
      servers.push(
        await startSubgraphServer({
          rpcUrl: c.anvil.url,
          chainId: c.chainId,
          transactionManager: c.deployment.transactionManager,
        }),
      );
    }
    r = await startRouter(s, { subgraph: { [SENDING]: servers[0].url, [RECEIVING]: servers[1].url } });
    const latencyMs = await happyPath();
    console.log(`e2e prepare latency (subgraph source): ${latencyMs} ms`);
    expect(enqueued()).toEqual([
      ["prepare-receiver", "subgraph"],
      ["fulfill-sender", "subgraph"],
    ]);
    expect(servers[0].operations()).toContain("GetSenderTransactions");
    expect(servers[1].operations()).toContain("GetReceiverTransactions");
  });

  it("3a. expiry: an unfulfilled receiving side is cancelled after its expiry, then the sender is refunded", async () => {
    r = await startRouter(s);
    const liquidity = await routerLiquidity(s, s.receiving);
    const userBefore = await tokenBalance(s.sending, s.user.address);
    const t = await userPrepare(s);
    const prepared = await waitForEvent(s.receiving, "prepared", t.transactionId);
    expect(await routerLiquidity(s, s.receiving)).toBe(liquidity - BigInt(t.bid.amountReceived));
    await nextPollerTick(RECEIVING);
    await r.idle(RECEIVING);
    expect(await transferEvents(s.receiving, "cancelled", t.transactionId)).toEqual([]);

    await increaseTime(s, prepared.txData.expiry - (await latestTimestamp(s.receiving)) + 10);
    const receiverCancel = await waitForEvent(s.receiving, "cancelled", t.transactionId);
    const senderCancel = await waitForEvent(s.sending, "cancelled", t.transactionId);
    await r.idle(SENDING);
    await r.idle(RECEIVING);
    expect(await routerLiquidity(s, s.receiving)).toBe(liquidity);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(AMOUNT);
    expect(await tokenBalance(s.sending, s.user.address)).toBe(userBefore - AMOUNT);
    expect([await senderOf(s.receiving, receiverCancel), await senderOf(s.sending, senderCancel)]).toEqual([
      s.router,
      s.router,
    ]);
    // Before the sender's own expiry: only the router may cancel it (#C:025), so it acted on the receiver cancel.
    expect(await latestTimestamp(s.sending)).toBeLessThan(t.txData.expiry);
    expect(await r.jobIds(RECEIVING)).toEqual(
      [jobId(TX_JOB.cancelReceiver, t), jobId(TX_JOB.prepareReceiver, t)].sort(),
    );
    expect(await r.jobIds(SENDING)).toEqual([jobId(TX_JOB.cancelSender, t)]);
    expect((await transferEvents(s.sending, "cancelled", t.transactionId)).length).toBe(1);
  });

  it("3b. refused sending prepares never get a receiving side and are refunded at once, without the 780 s buffer", async () => {
    r = await startRouter(s);
    const frauds = [
      await userPrepare(s, { tamper: { receivingAddress: Wallet.createRandom().address } }),
      await userPrepare(s, { bidSigner: anotherKey }),
    ];
    const preparedAtSec = await latestTimestamp(s.sending);
    // No chain time added: the poller declined them, so no prepare of ours can follow and the refund goes now.
    for (const f of frauds) {
      await waitForEvent(s.sending, "cancelled", f.transactionId);
    }
    expect((await latestTimestamp(s.sending)) - preparedAtSec).toBeLessThan(780);
    await r.idle(SENDING);
    expect(await Promise.all(frauds.map((f) => tokenBalance(s.sending, f.fallback)))).toEqual([AMOUNT, AMOUNT]);
    expect(await Promise.all(frauds.map((f) => preparedCount(f, s.receiving)))).toEqual([0, 0]);
    expect(await r.jobIds(RECEIVING)).toEqual([]);
    const reasons = await Promise.all(
      frauds.map(
        async (f) => ((await r?.jobData(SENDING, jobId(TX_JOB.cancelSender, f))) as CancelSenderJobData).reason,
      ),
    );
    expect(reasons).toEqual(["receivingAddress-mismatch", "bid-signer-mismatch"]);
  });

  it("4. fraud table: no receiving prepare for any tampered transfer, while an honest control sent with them is prepared", async () => {
    r = await startRouter(s);
    const nowSec = await latestTimestamp(s.sending);
    const cases: Array<[string, PrepareParams]> = [
      ["another sending asset", { tamper: { sendingAssetId: s.otherToken } }],
      ["another receiving chain", { tamper: { receivingChainId: CHAIN1 } }],
      ["another receiving address", { tamper: { receivingAddress: Wallet.createRandom().address } }],
      ["1 wei below the 10 % tolerance", { tamper: { amount: (AMOUNT * 90n) / 100n - 1n } }],
      ["an expired bid", { bid: { bidExpiry: nowSec - 1 } }],
      ["a bid signed by another key", { bidSigner: anotherKey }],
    ];
    const frauds: UserTransfer[] = [];
    for (const [, params] of cases) {
      frauds.push(await userPrepare(s, params));
    }
    const control = await userPrepare(s); // last: its receiving prepare comes from a tick that decided every fraud
    const controlPrepared = await waitForEvent(s.receiving, "prepared", control.transactionId);
    expect(controlPrepared.txData.amount).toBe(control.bid.amountReceived);
    // One more tick of each poller over the same records, and an idle receiving queue.
    await s.sending.anvil.mine(1);
    await s.receiving.anvil.mine(1);
    await syncedPast(SENDING, await s.sending.provider.getBlockNumber());
    await syncedPast(RECEIVING, await s.receiving.provider.getBlockNumber());
    await r.idle(RECEIVING);

    const counts = async (chain: E2eStack["receiving"]) =>
      Object.fromEntries(
        await Promise.all(cases.map(async ([what], i) => [what, await preparedCount(frauds[i], chain)] as const)),
      );
    const none = Object.fromEntries(cases.map(([what]) => [what, 0]));
    expect(await counts(s.receiving)).toEqual(none);
    expect(await counts(s.chain1)).toEqual(none);
    expect(await r.jobIds(RECEIVING)).toEqual([jobId(TX_JOB.prepareReceiver, control)]);
    expect(await r.jobIds(CHAIN1)).toEqual([]);

    // And each is refunded, exactly, at once: no chain time is added (nothing is left for later tests).
    for (const f of frauds) {
      await waitForEvent(s.sending, "cancelled", f.transactionId);
    }
    await r.idle(SENDING);
    expect(await r.jobIds(SENDING)).toEqual(frauds.map((f) => jobId(TX_JOB.cancelSender, f)).sort());
    const refunds = await Promise.all(frauds.map((f) => tokenBalance(s.sending, f.fallback, f.txData.sendingAssetId)));
    expect(refunds).toEqual(frauds.map((f) => BigInt(f.txData.amount)));
    expect(refunds[0]).toBe(AMOUNT); // in the other token
    expect(refunds[3]).toBe((AMOUNT * 90n) / 100n - 1n);
    expect(await counts(s.receiving)).toEqual(none);
  });

  it("5. POST /cancel-sender on the running admin API: 401, 404, 409, then a refund exactly once after the user cancels the receiving side", async () => {
    r = await startRouter(s);
    const t = await userPrepare(s);
    const prepared = await waitForEvent(s.receiving, "prepared", t.transactionId);
    const body = {
      adminToken: ADMIN_TOKEN,
      senderChainId: SENDING,
      transactionId: t.transactionId,
      user: s.user.address,
    };
    const post = (b: Record<string, unknown>) => postAdmin(running(), "/cancel-sender", b);

    expect(await post({ ...body, adminToken: "not-the-admin-token-0123456789" })).toMatchObject({
      status: 401,
      body: { error: "unauthorized" },
    });
    expect(await post({ ...body, transactionId: hexlify(randomBytes(32)) })).toMatchObject({
      status: 404,
      body: { error: "transaction_not_found" },
    });
    expect(await post(body)).toMatchObject({ status: 409, body: { error: "receiver_live" } });

    const liquidity = await routerLiquidity(s, s.receiving);
    await userCancelReceiver(s, prepared.txData);
    expect(await routerLiquidity(s, s.receiving)).toBe(liquidity + BigInt(t.bid.amountReceived));
    expect(await post(body)).toMatchObject({ status: 409, body: { error: "sender_too_new" } });

    await increaseTime(s, 800);
    const reply = await post(body);
    const cancel = await waitForEvent(s.sending, "cancelled", t.transactionId);
    // A whole tick of each poller after the refund, then an idle sending queue: a second refund would show now.
    await nextPollerTick(SENDING);
    await nextPollerTick(RECEIVING);
    await r.idle(SENDING);
    // The router's poller may get there first under the same job id: the API then answers with that job's
    // hash, or 409 sender_not_prepared once it found the sending side cancelled.
    if (reply.status === 200) {
      expect(reply.body).toEqual({ transactionHash: cancel.transactionHash });
    } else {
      expect(reply).toMatchObject({ status: 409, body: { error: "sender_not_prepared" } });
    }
    const job = (await r.jobData(SENDING, jobId(TX_JOB.cancelSender, t))) as CancelSenderJobData | undefined;
    console.log(`e2e cancel-sender race: API answered ${reply.status}, job reason ${job?.reason}`);
    // A job the API created is always answered with its hash.
    expect([
      ["admin", 200],
      ["receiver-cancelled", 200],
      ["receiver-cancelled", 409],
    ]).toContainEqual([job?.reason, reply.status]);
    expect(await r.jobIds(SENDING)).toEqual([jobId(TX_JOB.cancelSender, t)]);
    expect(await transferEvents(s.sending, "cancelled", t.transactionId)).toHaveLength(1);
    expect(await senderOf(s.sending, cancel)).toBe(s.router);
    expect(await tokenBalance(s.sending, t.fallback)).toBe(AMOUNT);
  });

  /** A transfer prepared as the sending poller dies, three while it is down: each gets exactly one receiving prepare. */
  async function pollerDownScenario(kill: () => Promise<void>, restart: () => Promise<void>): Promise<void> {
    const router = running();
    const live = await userPrepare(s);
    await waitForEvent(s.receiving, "prepared", live.transactionId); // the sending poller is up
    const inFlight = await userPrepare(s);
    await kill();
    const down = [await userPrepare(s), await userPrepare(s), await userPrepare(s)];
    // With the sending poller down nothing enqueues their prepares: a whole tick of the receiving poller and an
    // idle receiving queue show nothing reached 1338.
    await nextPollerTick(RECEIVING);
    await router.idle(RECEIVING);
    expect(await Promise.all(down.map((t) => preparedCount(t, s.receiving)))).toEqual([0, 0, 0]);

    await restart();
    const all = [live, inFlight, ...down];
    for (const t of all) {
      await waitForEvent(s.receiving, "prepared", t.transactionId);
    }
    await s.sending.anvil.mine(1); // the restarted poller decides the same records once more
    await syncedPast(SENDING, await s.sending.provider.getBlockNumber());
    await router.idle(RECEIVING);
    expect(await Promise.all(all.map((t) => preparedCount(t, s.receiving)))).toEqual([1, 1, 1, 1, 1]);
    expect(await router.jobIds(RECEIVING)).toEqual(all.map((t) => jobId(TX_JOB.prepareReceiver, t)).sort());
  }

  it("6a. the poller of 1337 stopped mid-run and restarted: one receiving prepare per transfer, no duplicate job", async () => {
    r = await startRouter(s);
    const router = r;
    // The far start block proves the stored cursor, not the start block, decides where reading resumes.
    await pollerDownScenario(
      () => router.stopPoller(SENDING),
      () => router.startPoller(SENDING, 10 ** 9),
    );
  });

  it("6b. the poller of 1337 as a child process, SIGKILLed mid-run and respawned: the same guarantees", async () => {
    r = await startRouter(s, { pollers: [RECEIVING] });
    const router = r;
    let child = await router.spawnPoller(SENDING);
    await pollerDownScenario(
      async () => {
        process.kill(child.pid, "SIGKILL");
        const exit = await waitFor("poller child to die", async () => child.exitStatus() ?? undefined);
        expect(exit.signal).toBe("SIGKILL");
      },
      async () => {
        child = await router.spawnPoller(SENDING, 10 ** 9);
      },
    );
  });
});

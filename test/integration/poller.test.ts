import { UnrecoverableError } from "bullmq";
import { Wallet } from "ethers";
import type { RouterConfig } from "../../shared/config/types";
import { TX_JOB, type TxJobData } from "../../shared/queues";
import { pollerCursorKey } from "../../shared/coordination/keys";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import type { PollerOptions, RunningPoller } from "../../services/poller/start-poller";
import { DECISION_BATCH_SIZE } from "../../services/poller/decide-open";
import { ANVIL_MNEMONIC } from "../harness/anvil";
import { readBigInt } from "../harness/deploy";
import {
  AMOUNT,
  RECEIVING,
  SENDING,
  enqueueLines,
  nextTick,
  pollerConfig,
  routerPrepareReceiver,
  startTestPoller,
  startTestPollers,
  syncedPast,
  usePollerSuite,
  userFulfill,
  userPrepare,
  type PollerStack,
  type Queues,
  type UserPrepareParams,
  type UserPrepared,
  FAST_DETECTION_BOUND_MS,
  enqueueLogged,
} from "./poller-fixture";
import { waitFor } from "../harness/wait";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

/** Pollers of both chains in-process (startPoller, as main.ts runs them) against two anvil chains + redis. */

const USER = 5;

/** The receiving side's TransactionData as the router prepares it for `p`. */
function receiverTxData(s: PollerStack, p: UserPrepared, preparedBlockNumber: number): Record<string, unknown> {
  return { ...p.invariant, amount: p.bid.amountReceived, expiry: p.bid.expiry - 86400, preparedBlockNumber };
}

describe("poller (in-process, anvil 1337 → 1338, redis)", () => {
  const s = usePollerSuite("poller");

  const start = (config: RouterConfig): Promise<RunningPoller[]> => startTestPollers(s, config);
  const restartSending = (config: RouterConfig, options: PollerOptions): Promise<RunningPoller> =>
    startTestPoller(s, { config, chainId: SENDING, options });
  const prepareJob = (p: UserPrepared) => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey);
  const waitForJob = (what: string, probe: () => ReturnType<Queues["job"]>) => waitFor(what, probe, 10_000);

  it("(a) turns a user prepare on 1337 into a prepare-receiver job on tx-1338 with the exact sender data, within a tick or two of its block", async () => {
    await start(pollerConfig(s, s.prefix));
    const prepared = await userPrepare(s, { user: USER });
    const job = await waitForJob("prepare-receiver job", () => prepareJob(prepared));

    expect(job.id).toBe(`prepare-receiver-${prepared.transactionId.toLowerCase()}-${prepared.user.toLowerCase()}`);
    expect(job.timestamp - prepared.minedAtMs).toBeLessThan(FAST_DETECTION_BOUND_MS);
    const block = await s.sending.provider.getBlock(prepared.receipt.blockNumber);
    expect(job.data).toEqual({
      chainId: RECEIVING,
      sender: {
        chainId: SENDING,
        txData: {
          ...prepared.invariant,
          amount: AMOUNT.toString(),
          expiry: prepared.bid.expiry,
          preparedBlockNumber: prepared.receipt.blockNumber,
        },
        encryptedCallData: "0x",
        encodedBid: prepared.encodedBid,
        bidSignature: prepared.bidSignature.toLowerCase(),
        prepareTransactionHash: prepared.receipt.hash,
        preparedTimestamp: block?.timestamp,
      },
    });
    expect(await enqueueLogged(s.logs, prepared.transferKey)).toEqual([
      expect.objectContaining({
        action: "prepare-receiver",
        chain: RECEIVING,
        jobId: job.id,
        source: "logs",
        chainId: SENDING,
      }),
    ]);
    // The balances the auction will read: the router's liquidity on 1338 and the signer's gas, both from chain.
    const balances = createBalanceStore(s.queues.redis, s.prefix);
    const router = await s.routerSigner.getAddress();
    const onChain = await readBigInt(s.receiving.deployment.contracts.transactionManager, "routerBalances", [
      router,
      s.receiving.deployment.token,
    ]);
    await expect(balances.getRouterBalance(RECEIVING, s.receiving.deployment.token)).resolves.toMatchObject({
      amount: onChain,
    });
    await expect(balances.getGasBalance(RECEIVING)).resolves.toMatchObject({
      amount: await s.receiving.provider.getBalance(router),
    });
  });

  it("(b) re-reading the same blocks after a restart does not create a second job", async () => {
    const config = pollerConfig(s, s.prefix);
    const [sendingPoller] = await start(config);
    const prepared = await userPrepare(s, { user: USER });
    const job = await waitForJob("prepare-receiver job", () => prepareJob(prepared));

    await sendingPoller.stop();
    await s.queues.redis.del(pollerCursorKey(s.prefix, SENDING));
    await restartSending(config, { startBlock: prepared.receipt.blockNumber - 1 });
    await s.sending.anvil.mine(1);
    await syncedPast(s.queues, s.prefix, SENDING, prepared.receipt.blockNumber + 1);
    await nextTick(s, SENDING);

    expect((await prepareJob(prepared))?.timestamp).toBe(job.timestamp);
    expect(await s.queues.count(RECEIVING)).toBe(1);
    expect(enqueueLines(s.logs)).toHaveLength(1);
    expect(
      s.logs.lines().filter((l) => l.at === "poller.logs" && l.chainId === SENDING && l.startBlock !== undefined),
    ).toHaveLength(2);
  });

  it("(d) picks up, once, the transfers prepared while it was stopped (the cursor survives the restart)", async () => {
    const config = pollerConfig(s, s.prefix);
    const [sendingPoller] = await start(config);
    const first = await userPrepare(s, { user: USER });
    await sendingPoller.stop(); // mid-run: its tick for `first` may or may not have happened
    const whileDown = [await userPrepare(s, { user: USER }), await userPrepare(s, { user: 6 })];
    await nextTick(s, RECEIVING); // the rest of the router ticks on while the sending poller is down
    expect(await prepareJob(whileDown[0])).toBeUndefined();

    // A start block far ahead proves the stored cursor, not the start block, decides where reading resumes.
    await restartSending(config, { startBlock: 10 ** 9 });
    for (const p of [first, ...whileDown]) {
      await waitForJob("job after restart", () => prepareJob(p));
      expect(await enqueueLogged(s.logs, p.transferKey)).toHaveLength(1);
    }
    await nextTick(s, SENDING);
    expect(await s.queues.count(RECEIVING)).toBe(3);
  });

  it("(h) fulfills the sending side once the user's receiving fulfill is seen on 1338", async () => {
    await start(pollerConfig(s, s.prefix));
    const prepared = await userPrepare(s, { user: USER });
    await waitForJob("prepare-receiver job", () => prepareJob(prepared));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    const { signature, receipt: fulfill } = await userFulfill(s, prepared, receiverPrepare);

    const job = await waitForJob("fulfill-sender job", () =>
      s.queues.job(SENDING, TX_JOB.fulfillSender, prepared.transferKey),
    );
    expect(job.data).toEqual({
      chainId: SENDING,
      txData: {
        ...prepared.invariant,
        amount: AMOUNT.toString(),
        expiry: prepared.bid.expiry,
        preparedBlockNumber: prepared.receipt.blockNumber,
      },
      signature: signature.toLowerCase(),
      relayerFee: "0",
      callData: "0x",
      receiverFulfillTransactionHash: fulfill.hash,
    });
    expect(await s.queues.job(SENDING, TX_JOB.cancelSender, prepared.transferKey)).toBeUndefined();
  });

  it("(f) cancels an expired receiving side on 1338, and never before its expiry", async () => {
    await start(pollerConfig(s, s.prefix));
    const prepared = await userPrepare(s, { user: USER });
    await waitForJob("prepare-receiver job", () => prepareJob(prepared));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    await syncedPast(s.queues, s.prefix, RECEIVING, receiverPrepare.blockNumber);
    await nextTick(s, RECEIVING);
    expect(await s.queues.job(RECEIVING, TX_JOB.cancelReceiver, prepared.transferKey)).toBeUndefined();

    await s.receiving.anvil.increaseTime(3 * 86400);
    await s.receiving.anvil.mine(1);
    const job = await waitForJob("cancel-receiver job", () =>
      s.queues.job(RECEIVING, TX_JOB.cancelReceiver, prepared.transferKey),
    );
    expect(job.data).toEqual({
      chainId: RECEIVING,
      txData: receiverTxData(s, prepared, receiverPrepare.blockNumber),
      reason: "receiver-expired",
    });
    expect(enqueueLines(s.logs, prepared.transferKey).map((l) => l.action)).toEqual([
      "prepare-receiver",
      "cancel-receiver",
    ]);
    expect(await s.queues.job(SENDING, TX_JOB.cancelSender, prepared.transferKey)).toBeUndefined();
  });

  it("(c) cancels fraudulent sending sides at once (our own refusal's refund) and never prepares their receiving side", async () => {
    const config = pollerConfig(s, s.prefix);
    const startBlocks = [
      (await s.sending.provider.getBlockNumber()) + 1,
      (await s.receiving.provider.getBlockNumber()) + 1,
    ];
    const latest = await s.sending.provider.getBlock("latest");
    const cases: Array<[string, Omit<UserPrepareParams, "user">, string]> = [
      ["a different sending asset", { tamper: { sendingAssetId: s.otherToken } }, "sendingAssetId-mismatch"],
      ["a different receiving chain", { tamper: { receivingChainId: 1 } }, "receivingChainId-mismatch"],
      [
        "a different receiving address",
        { tamper: { receivingAddress: Wallet.createRandom().address } },
        "receivingAddress-mismatch",
      ],
      ["less than the bid beyond tolerance", { tamper: { amount: (AMOUNT * 80n) / 100n } }, "amount-outside-tolerance"],
      ["an expired bid", { bid: { bidExpiry: (latest?.timestamp ?? 0) - 1 } }, "bid-expired"],
      ["a bid signed by another key", { bidSigner: createMnemonicSigner(ANVIL_MNEMONIC) }, "bid-signer-mismatch"],
    ];
    const prepared: UserPrepared[] = [];
    for (const [, params] of cases) {
      prepared.push(await userPrepare(s, { user: USER, ...params }));
    }
    // Not a failed verification: the lifecycle's cancel of a transfer to an unconfigured chain keeps the buffer.
    const unconfigured = await userPrepare(s, { user: USER, tamper: { receivingChainId: 1339 } });
    // Same fraud, but a receiving prepare was already handed to the submitter: never refund that sending side.
    const guarded = await userPrepare(s, { user: USER, bidSigner: createMnemonicSigner(ANVIL_MNEMONIC) });
    await s.queues.add(RECEIVING, TX_JOB.prepareReceiver, guarded.transferKey, { attempts: 8 });
    for (const [i, chainId] of [SENDING, RECEIVING].entries()) {
      await startTestPoller(s, { config, chainId, options: { startBlock: startBlocks[i] } });
    }

    // No chain time passes: each is refunded within the 780 s buffer.
    for (const [i, [what, , reason]] of cases.entries()) {
      const job = await waitForJob(`cancel-sender for ${what}`, () =>
        s.queues.job(SENDING, TX_JOB.cancelSender, prepared[i].transferKey),
      );
      const data = job.data as TxJobData & { reason: string; force: boolean; txData: { transactionId: string } };
      expect({ what, reason: data.reason, force: data.force, txId: data.txData.transactionId, data }).toEqual({
        what,
        reason,
        force: false,
        txId: prepared[i].transactionId.toLowerCase(),
        data: expect.objectContaining({ afterOwnRefusal: true }),
      });
    }
    await nextTick(s, SENDING);
    expect(await s.queues.job(SENDING, TX_JOB.cancelSender, unconfigured.transferKey)).toBeUndefined(); // sender-too-new
    expect(await s.queues.job(SENDING, TX_JOB.cancelSender, guarded.transferKey)).toBeUndefined();
    expect(
      s.logs
        .lines()
        .filter((l) => l.transferKey === guarded.transferKey && l.at === "poller.decide" && l.level === "warn"),
    ).toHaveLength(1);

    await s.sending.anvil.increaseTime(800);
    await s.sending.anvil.mine(1);
    const late = await waitForJob("cancel-sender for an unconfigured receiving chain", () =>
      s.queues.job(SENDING, TX_JOB.cancelSender, unconfigured.transferKey),
    );
    expect(late.data).toMatchObject({ reason: "receiver-not-configured", force: false });
    expect((late.data as { afterOwnRefusal?: boolean }).afterOwnRefusal).toBeUndefined();
    await nextTick(s, SENDING);
    expect(await s.queues.job(SENDING, TX_JOB.cancelSender, guarded.transferKey)).toBeUndefined();
    expect(await s.queues.count(RECEIVING)).toBe(1); // only the one added by the test
    expect(await s.queues.count(1)).toBe(0);
    expect(enqueueLines(s.logs).map((l) => l.action)).toEqual([...cases, "unconfigured"].map(() => "cancel-sender"));
  });

  it("(i) retries a job failed by retriable errors once its attempts ran out, and alerts once about an unrecoverable one", async () => {
    const config = pollerConfig(s, s.prefix);
    const startBlocks = [
      (await s.sending.provider.getBlockNumber()) + 1,
      (await s.receiving.provider.getBlockNumber()) + 1,
    ];
    const exhausted = await userPrepare(s, { user: USER });
    const unrecoverable = await userPrepare(s, { user: USER });
    await s.queues.add(RECEIVING, TX_JOB.prepareReceiver, exhausted.transferKey, { attempts: 1 });
    await s.queues.add(RECEIVING, TX_JOB.prepareReceiver, unrecoverable.transferKey, { attempts: 8 });
    await s.queues.failAll(RECEIVING, (jobId) =>
      jobId.includes(exhausted.transactionId.toLowerCase())
        ? new Error("RPC_UNAVAILABLE: down")
        : new UnrecoverableError("REVERTED"),
    );

    for (const [i, chainId] of [SENDING, RECEIVING].entries()) {
      await startTestPoller(s, { config, chainId, options: { startBlock: startBlocks[i] } });
    }
    await waitFor(
      "retry",
      async () => (s.logs.lines().some((l) => l.at === "poller.retry") ? true : undefined),
      10_000,
    );
    await nextTick(s, SENDING);
    await nextTick(s, RECEIVING);

    const retried = await prepareJob(exhausted);
    expect([await retried?.getState(), retried?.attemptsMade]).toEqual(["waiting", 0]);
    expect(await (await prepareJob(unrecoverable))?.getState()).toBe("failed");
    expect(
      s.logs
        .lines()
        .filter((l) => l.at === "poller.retry")
        .map((l) => l.transferKey),
    ).toEqual([exhausted.transferKey]);
    expect(
      s.logs
        .lines()
        .filter((l) => l.at === "poller.job-failed")
        .map((l) => [l.transferKey, l.level]),
    ).toEqual([[unrecoverable.transferKey, "error"]]);
    expect(enqueueLines(s.logs)).toEqual([]);
  });

  it("(g) enqueues nothing in diagnosticMode, and says so", async () => {
    await start(pollerConfig(s, s.prefix, { diagnosticMode: true }));
    const prepared = await userPrepare(s, { user: USER });
    // A normal poller of the same chain on a prefix of its own is the clock: once it has ticked past these
    // blocks, a diagnostic poller that polled would have enqueued too.
    const controlPrefix = uniquePrefix();
    await startTestPoller(s, {
      config: pollerConfig(s, controlPrefix),
      chainId: SENDING,
      options: { startBlock: prepared.receipt.blockNumber },
      logs: captureLogs(),
    });
    await nextTick(s, SENDING, controlPrefix);
    expect(await prepareJob(prepared)).toBeUndefined();
    expect([await s.queues.count(SENDING), await s.queues.count(RECEIVING)]).toEqual([0, 0]);
    expect(await s.queues.redis.keys(`${s.prefix}:router:*`)).toEqual([]);
    const idle = s.logs.lines().filter((l) => l.message === "diagnostic mode: poller idle" && l.level === "warn");
    expect(idle.map((l) => l.chainId).sort()).toEqual([SENDING, RECEIVING]);
  });

  it("decides many open transfers at a Redis cost that does not grow by a job read and a record read per transfer", async () => {
    // Four batches: a tick has a fixed cost of its own (about 12-16 GETs: lease, heads, requests, balances), so
    // fewer transfers than that could not tell a per-transfer read from the fixed part.
    const count = 4 * DECISION_BATCH_SIZE;
    const prepared: UserPrepared[] = [];
    for (let i = 0; i < count; i += 1) prepared.push(await userPrepare(s, { user: USER }));
    await restartSending(pollerConfig(s, s.prefix), {
      startBlock: prepared[0].receipt.blockNumber,
      reconcileIntervalMs: 10 * 60_000, // the measured ticks decide; they do not reconcile
    });
    for (const p of prepared) await waitForJob("prepare-receiver job", () => prepareJob(p));
    await nextTick(s, SENDING);
    // Every transfer is open and its job exists: what each tick costs from now on is the steady state.
    const commandCalls = async (): Promise<Map<string, number>> => {
      const calls = new Map<string, number>();
      for (const line of (await s.queues.redis.info("commandstats")).split("\n")) {
        const found = /^cmdstat_(\w+):calls=(\d+)/.exec(line);
        if (found) calls.set(found[1], Number(found[2]));
      }
      return calls;
    };
    // Every poller on this Redis (both chains') counts in commandstats, and a nextTick can span two ticks when the
    // poll interval passes before its block: divide by the ticks the pollers logged, not by the nextTicks asked. A
    // tick still running at the second reading has sent some of its commands without its line: one tick more.
    const tickLines = (): number => s.logs.lines().filter((l) => l.at === "poller.tick" && l.message === "tick").length;
    const ticksBefore = tickLines();
    const before = await commandCalls();
    for (let i = 0; i < 3; i += 1) await nextTick(s, SENDING);
    const ticksAfter = tickLines();
    const after = await commandCalls();
    const ticks = ticksAfter - ticksBefore + 1;
    expect(ticks).toBeGreaterThanOrEqual(4);
    const perTick = (command: string): number => ((after.get(command) ?? 0) - (before.get(command) ?? 0)) / ticks;
    // The other sides come in one MGET per batch (plus the open list's), not a GET per transfer; an existing job
    // is known by its state alone (getJobState), not read whole (HGETALL) and then asked its state.
    expect(perTick("mget")).toBeLessThanOrEqual(count / DECISION_BATCH_SIZE + 1);
    expect(perTick("get")).toBeLessThan(count);
    expect(perTick("hgetall")).toBeLessThan(count / 4);
    expect(await s.queues.count(RECEIVING)).toBe(count); // and nothing was enqueued twice
  });
});

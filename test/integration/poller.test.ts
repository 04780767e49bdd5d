import { UnrecoverableError } from "bullmq";
import { Wallet, getBytes } from "ethers";
import type { RouterConfig } from "../../shared/config/types";
import { fulfillPayloadHash } from "../../shared/protocol/user-signatures";
import { TX_JOB, pollerCursorKey, type TxJobData } from "../../shared/queues";
import { createMnemonicSigner } from "../../shared/signer/mnemonic-signer";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { startPoller, type PollerOptions, type RunningPoller } from "../../services/poller/start-poller";
import { ANVIL_MNEMONIC, anvilWallet } from "../harness/anvil";
import { liveChildPids } from "../harness/child-process";
import { nxtpContractAt, readBigInt, sendTx } from "../harness/deploy";
import {
  AMOUNT,
  FAST,
  RECEIVING,
  SENDING,
  enqueueLines,
  openQueues,
  pollerConfig,
  routerPrepareReceiver,
  startPollerStack,
  startPollers,
  syncedPast,
  userPrepare,
  type PollerStack,
  type Queues,
  type UserPrepareParams,
  type UserPrepared,
} from "./poller-fixture";
import { captureLogs, uniquePrefix, waitFor, type CapturedLogger } from "./submitter-fixture";

/** Pollers of both chains in-process (startPoller, as main.ts runs them) against two anvil chains + redis. */

const USER = 5;

/** The receiving side's TransactionData as the router prepares it for `p`. */
function receiverTxData(s: PollerStack, p: UserPrepared, preparedBlockNumber: number): Record<string, unknown> {
  return { ...p.invariant, amount: p.bid.amountReceived, expiry: p.bid.expiry - 86400, preparedBlockNumber };
}

describe("poller (in-process, anvil 1337 → 1338, redis)", () => {
  let s: PollerStack;
  let queues: Queues;
  let logs: CapturedLogger;
  let prefix: string;
  const running: RunningPoller[] = [];

  const start = async (config: RouterConfig, options: PollerOptions = {}): Promise<RunningPoller[]> => {
    const started = await startPollers(s, config, logs, options);
    running.push(...started);
    return started;
  };
  const restartSending = async (config: RouterConfig, options: PollerOptions): Promise<RunningPoller> => {
    const poller = await startPoller({
      config,
      logger: logs.logger,
      chainId: SENDING,
      options: { ...FAST, ...options },
    });
    running.push(poller);
    return poller;
  };
  /** Mines a block and waits until the chain's poller synced past it: a whole tick ran after this call. */
  const nextTick = async (chainId: number, tickPrefix = prefix): Promise<void> => {
    const chain = chainId === SENDING ? s.sending : s.receiving;
    await chain.anvil.mine(1);
    await syncedPast(queues, tickPrefix, chainId, await chain.provider.getBlockNumber());
  };
  const prepareJob = (p: UserPrepared) => queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey);
  const waitForJob = (what: string, probe: () => ReturnType<Queues["job"]>) => waitFor(what, probe, 10_000);

  beforeAll(async () => {
    s = await startPollerStack();
  }, 120_000);

  beforeEach(() => {
    prefix = uniquePrefix();
    queues = openQueues(s.redisUrl, prefix);
    logs = captureLogs();
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await queues.close();
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("(a) turns a user prepare on 1337 into a prepare-receiver job on tx-1338 with the exact sender data, within 1 s of its block", async () => {
    await start(pollerConfig(s, prefix));
    const prepared = await userPrepare(s, { user: USER });
    const job = await waitForJob("prepare-receiver job", () => prepareJob(prepared));

    expect(job.id).toBe(`prepare-receiver-${prepared.transactionId.toLowerCase()}-${prepared.user.toLowerCase()}`);
    expect(job.timestamp - prepared.minedAtMs).toBeLessThan(1000);
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
    expect(enqueueLines(logs, prepared.transferKey)).toEqual([
      expect.objectContaining({
        action: "prepare-receiver",
        chain: RECEIVING,
        jobId: job.id,
        source: "logs",
        chainId: SENDING,
      }),
    ]);
    // The balances the auction will read: the router's liquidity on 1338 and the signer's gas, both from chain.
    const balances = createBalanceStore(queues.redis, prefix);
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
    const config = pollerConfig(s, prefix);
    const [sendingPoller] = await start(config);
    const prepared = await userPrepare(s, { user: USER });
    const job = await waitForJob("prepare-receiver job", () => prepareJob(prepared));

    await sendingPoller.stop();
    await queues.redis.del(pollerCursorKey(prefix, SENDING));
    await restartSending(config, { startBlock: prepared.receipt.blockNumber - 1 });
    await s.sending.anvil.mine(1);
    await syncedPast(queues, prefix, SENDING, prepared.receipt.blockNumber + 1);
    await nextTick(SENDING);

    expect((await prepareJob(prepared))?.timestamp).toBe(job.timestamp);
    expect(await queues.count(RECEIVING)).toBe(1);
    expect(enqueueLines(logs)).toHaveLength(1);
    expect(
      logs.lines().filter((l) => l.at === "poller.logs" && l.chainId === SENDING && l.startBlock !== undefined),
    ).toHaveLength(2);
  });

  it("(d) picks up, once, the transfers prepared while it was stopped (the cursor survives the restart)", async () => {
    const config = pollerConfig(s, prefix);
    const [sendingPoller] = await start(config);
    const first = await userPrepare(s, { user: USER });
    await sendingPoller.stop(); // mid-run: its tick for `first` may or may not have happened
    const whileDown = [await userPrepare(s, { user: USER }), await userPrepare(s, { user: 6 })];
    await nextTick(RECEIVING); // the rest of the router ticks on while the sending poller is down
    expect(await prepareJob(whileDown[0])).toBeUndefined();

    // A start block far ahead proves the stored cursor, not the start block, decides where reading resumes.
    await restartSending(config, { startBlock: 10 ** 9 });
    for (const p of [first, ...whileDown]) {
      await waitForJob("job after restart", () => prepareJob(p));
      expect(enqueueLines(logs, p.transferKey)).toHaveLength(1);
    }
    await nextTick(SENDING);
    expect(await queues.count(RECEIVING)).toBe(3);
  });

  it("(h) fulfills the sending side once the user's receiving fulfill is seen on 1338", async () => {
    await start(pollerConfig(s, prefix));
    const prepared = await userPrepare(s, { user: USER });
    await waitForJob("prepare-receiver job", () => prepareJob(prepared));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    const txData = receiverTxData(s, prepared, receiverPrepare.blockNumber);
    const user = anvilWallet(USER, s.receiving.provider);
    const payload = {
      transactionId: prepared.transactionId,
      relayerFee: "0",
      receivingChainId: RECEIVING,
      receivingChainTxManagerAddress: s.receiving.deployment.transactionManager,
    };
    const signature = await user.signMessage(getBytes(fulfillPayloadHash(payload)));
    const tm = nxtpContractAt("TransactionManager", s.receiving.deployment.transactionManager, user);
    const fulfill = await sendTx(tm, "fulfill", [
      { txData, relayerFee: 0, signature, callData: "0x", encodedMeta: "0x" },
    ]);

    const job = await waitForJob("fulfill-sender job", () =>
      queues.job(SENDING, TX_JOB.fulfillSender, prepared.transferKey),
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
    expect(await queues.job(SENDING, TX_JOB.cancelSender, prepared.transferKey)).toBeUndefined();
  });

  it("(f) cancels an expired receiving side on 1338, and never before its expiry", async () => {
    await start(pollerConfig(s, prefix));
    const prepared = await userPrepare(s, { user: USER });
    await waitForJob("prepare-receiver job", () => prepareJob(prepared));
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    await syncedPast(queues, prefix, RECEIVING, receiverPrepare.blockNumber);
    await nextTick(RECEIVING);
    expect(await queues.job(RECEIVING, TX_JOB.cancelReceiver, prepared.transferKey)).toBeUndefined();

    await s.receiving.anvil.increaseTime(3 * 86400);
    await s.receiving.anvil.mine(1);
    const job = await waitForJob("cancel-receiver job", () =>
      queues.job(RECEIVING, TX_JOB.cancelReceiver, prepared.transferKey),
    );
    expect(job.data).toEqual({
      chainId: RECEIVING,
      txData: receiverTxData(s, prepared, receiverPrepare.blockNumber),
      reason: "receiver-expired",
    });
    expect(enqueueLines(logs, prepared.transferKey).map((l) => l.action)).toEqual([
      "prepare-receiver",
      "cancel-receiver",
    ]);
    expect(await queues.job(SENDING, TX_JOB.cancelSender, prepared.transferKey)).toBeUndefined();
  });

  it("(c) cancels fraudulent sending sides after the 780 s buffer and never prepares their receiving side", async () => {
    await start(pollerConfig(s, prefix));
    const latest = await s.sending.provider.getBlock("latest");
    const cases: Array<[string, Omit<UserPrepareParams, "user">, string]> = [
      ["a different sending asset", { tamper: { sendingAssetId: s.otherToken } }, "sendingAssetId-mismatch"],
      ["a different receiving chain", { tamper: { receivingChainId: 1 } }, "receivingChainId-mismatch"],
      ["an unconfigured receiving chain", { tamper: { receivingChainId: 1339 } }, "receiver-not-configured"],
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
    // Same fraud, but a receiving prepare was already handed to the submitter: never refund that sending side.
    const guarded = await userPrepare(s, { user: USER, bidSigner: createMnemonicSigner(ANVIL_MNEMONIC) });
    await queues.add(RECEIVING, TX_JOB.prepareReceiver, guarded.transferKey, { attempts: 8 });
    await syncedPast(queues, prefix, SENDING, guarded.receipt.blockNumber);
    await nextTick(SENDING);
    for (const p of prepared) {
      expect(await queues.job(SENDING, TX_JOB.cancelSender, p.transferKey)).toBeUndefined(); // sender-too-new
    }

    await s.sending.anvil.increaseTime(800);
    await s.sending.anvil.mine(1);
    for (const [i, [what, , reason]] of cases.entries()) {
      const job = await waitForJob(`cancel-sender for ${what}`, () =>
        queues.job(SENDING, TX_JOB.cancelSender, prepared[i].transferKey),
      );
      const data = job.data as TxJobData & { reason: string; force: boolean; txData: { transactionId: string } };
      expect({ what, reason: data.reason, force: data.force, txId: data.txData.transactionId }).toEqual({
        what,
        reason,
        force: false,
        txId: prepared[i].transactionId.toLowerCase(),
      });
    }
    await nextTick(SENDING);
    expect(await queues.job(SENDING, TX_JOB.cancelSender, guarded.transferKey)).toBeUndefined();
    expect(
      logs
        .lines()
        .filter((l) => l.transferKey === guarded.transferKey && l.at === "poller.decide" && l.level === "warn"),
    ).toHaveLength(1);
    expect(await queues.count(RECEIVING)).toBe(1); // only the one added by the test
    expect(await queues.count(1)).toBe(0);
    expect(enqueueLines(logs).map((l) => l.action)).toEqual(cases.map(() => "cancel-sender"));
  });

  it("(i) retries a job failed by retriable errors once its attempts ran out, and alerts once about an unrecoverable one", async () => {
    const config = pollerConfig(s, prefix);
    const startBlocks = [
      (await s.sending.provider.getBlockNumber()) + 1,
      (await s.receiving.provider.getBlockNumber()) + 1,
    ];
    const exhausted = await userPrepare(s, { user: USER });
    const unrecoverable = await userPrepare(s, { user: USER });
    await queues.add(RECEIVING, TX_JOB.prepareReceiver, exhausted.transferKey, { attempts: 1 });
    await queues.add(RECEIVING, TX_JOB.prepareReceiver, unrecoverable.transferKey, { attempts: 8 });
    await queues.failAll(RECEIVING, (jobId) =>
      jobId.includes(exhausted.transactionId.toLowerCase())
        ? new Error("RPC_UNAVAILABLE: down")
        : new UnrecoverableError("REVERTED"),
    );

    for (const [i, chainId] of [SENDING, RECEIVING].entries()) {
      running.push(
        await startPoller({ config, logger: logs.logger, chainId, options: { ...FAST, startBlock: startBlocks[i] } }),
      );
    }
    await waitFor("retry", async () => (logs.lines().some((l) => l.at === "poller.retry") ? true : undefined), 10_000);
    await nextTick(SENDING);
    await nextTick(RECEIVING);

    const retried = await prepareJob(exhausted);
    expect([await retried?.getState(), retried?.attemptsMade]).toEqual(["waiting", 0]);
    expect(await (await prepareJob(unrecoverable))?.getState()).toBe("failed");
    expect(
      logs
        .lines()
        .filter((l) => l.at === "poller.retry")
        .map((l) => l.transferKey),
    ).toEqual([exhausted.transferKey]);
    expect(
      logs
        .lines()
        .filter((l) => l.at === "poller.job-failed")
        .map((l) => [l.transferKey, l.level]),
    ).toEqual([[unrecoverable.transferKey, "error"]]);
    expect(enqueueLines(logs)).toEqual([]);
  });

  it("(g) enqueues nothing in diagnosticMode, and says so", async () => {
    await start(pollerConfig(s, prefix, { diagnosticMode: true }));
    const prepared = await userPrepare(s, { user: USER });
    // A normal poller of the same chain on a prefix of its own is the clock: once it has ticked past these
    // blocks, a diagnostic poller that polled would have enqueued too.
    const controlPrefix = uniquePrefix();
    running.push(
      await startPoller({
        config: pollerConfig(s, controlPrefix),
        logger: captureLogs().logger,
        chainId: SENDING,
        options: { ...FAST, startBlock: prepared.receipt.blockNumber },
      }),
    );
    await nextTick(SENDING, controlPrefix);
    expect(await prepareJob(prepared)).toBeUndefined();
    expect([await queues.count(SENDING), await queues.count(RECEIVING)]).toEqual([0, 0]);
    expect(await queues.redis.keys(`${prefix}:router:*`)).toEqual([]);
    const idle = logs.lines().filter((l) => l.message === "diagnostic mode: poller idle" && l.level === "warn");
    expect(idle.map((l) => l.chainId).sort()).toEqual([SENDING, RECEIVING]);
  });
});

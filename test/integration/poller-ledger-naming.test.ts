import { Queue } from "bullmq";
import { ZeroAddress, parseEther } from "ethers";
import type { LedgerProducer } from "../../shared/process/ledger-producer";
import { createLedgerProducer, openLedgerQueue } from "../../shared/process/ledger-producer";
import { LEDGER_QUEUE_NAME, TX_JOB, type BookTransactionJobData } from "../../shared/queues";
import { pollerCursorKey } from "../../shared/coordination/keys";
import { anvilWallet } from "../harness/anvil";
import { nxtpContractAt, sendTx } from "../harness/deploy";
import { startSubgraphServer, type SubgraphServer } from "../harness/subgraph-server";
import { waitFor } from "../harness/wait";
import {
  RECEIVING,
  SENDING,
  ledgerConfig,
  ledgerJobsOf,
  nextTick,
  pollerConfig,
  routerPrepareReceiver,
  startTestPoller,
  startTestPollers,
  storedCursor,
  usePollerSuite,
  userFulfill,
  userPrepare,
} from "./poller-fixture";

/**
 * The poller names every TransactionManager event of this router it reads (the user's sending prepare, the router's
 * receiving prepare, the user's receiving fulfill, LiquidityAdded) to the ledger queue, before it stores them and
 * before its cursor moves; in-process pollers (startPoller) on two anvil chains with the NXTP contracts and redis.
 */
const USER = 6;

describe("poller names this router's TransactionManager events to the ledger queue", () => {
  const s = usePollerSuite("poller-ledger");
  let ledgerQueue: Queue<BookTransactionJobData> | undefined;

  /** The test's view of the ledger queue (opened only where a ledger is on: opening it writes the queue's meta key). */
  const ledgerJobs = (): Promise<BookTransactionJobData[]> => {
    ledgerQueue ??= new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, {
      connection: s.queues.redis,
      prefix: s.prefix,
    });
    return ledgerJobsOf(ledgerQueue);
  };
  afterEach(async () => {
    await ledgerQueue?.close();
    ledgerQueue = undefined;
  });

  it("the user's sending prepare, the receiving prepare, the user's receiving fulfill and LiquidityAdded, once each across re-reads", async () => {
    const config = ledgerConfig(s, s.prefix);
    const [sendingPoller] = await startTestPollers(s, config);
    const prepared = await userPrepare(s, { user: USER });
    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    const fulfilled = await userFulfill(s, prepared, receiverPrepare);
    const router = await s.routerSigner.getAddress();
    const funder = anvilWallet(3, s.receiving.provider);
    const tm = nxtpContractAt("TransactionManager", s.receiving.deployment.transactionManager, funder);
    const added = await sendTx(tm, "addLiquidityFor", [parseEther("1"), ZeroAddress, router], {
      value: parseEther("1"),
    });
    await nextTick(s, SENDING);
    await nextTick(s, RECEIVING);

    const id = prepared.transactionId.toLowerCase();
    const expected: BookTransactionJobData[] = [
      { chainId: SENDING, hash: prepared.receipt.hash, source: "poller" as const, transactionId: id },
      { chainId: RECEIVING, hash: receiverPrepare.hash, source: "poller" as const, transactionId: id },
      { chainId: RECEIVING, hash: fulfilled.receipt.hash, source: "poller" as const, transactionId: id },
      { chainId: RECEIVING, hash: added.hash, source: "poller" as const },
    ].sort((a, b) => `${a.chainId}${a.hash}`.localeCompare(`${b.chainId}${b.hash}`));
    expect(await ledgerJobs()).toEqual(expected);

    // A takeover that reads the blocks again (a new poller and producer, the cursor gone): the same jobs, none added.
    await sendingPoller.stop();
    await s.queues.redis.del(pollerCursorKey(s.prefix, SENDING));
    await startTestPoller(s, { config, chainId: SENDING, options: { startBlock: prepared.receipt.blockNumber - 1 } });
    await nextTick(s, SENDING);
    expect(await ledgerJobs()).toEqual(expected);
  });

  it("a naming Redis refuses holds the cursor before the batch: nothing of it stored or decided, named and acted on once accepted", async () => {
    let refusing = true;
    let refused = 0;
    const producerQueue = openLedgerQueue(s.queues.redis, s.prefix, s.logs.logger);
    const real = createLedgerProducer({ queue: producerQueue, logger: s.logs.logger, chainId: SENDING });
    const gate: LedgerProducer = {
      name: async (entries) => {
        if (refusing) {
          refused += 1;
          return false;
        }
        return real.name(entries);
      },
    };
    const config = ledgerConfig(s, s.prefix);
    const startBlock = (await s.sending.provider.getBlockNumber()) + 1;
    await startTestPoller(s, { config, chainId: SENDING, options: { startBlock, ledger: gate } });
    const prepared = await userPrepare(s, { user: USER });
    // A poller ticks on a new block: each block is one more read of the prepare's range, refused again.
    await waitFor(
      "two refused namings",
      async () => {
        await s.sending.anvil.mine(1);
        return refused >= 2;
      },
      10_000,
      100,
    );
    expect((await storedCursor(s, SENDING))?.block ?? -1).toBeLessThan(prepared.receipt.blockNumber);
    expect(await s.queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey)).toBeUndefined();
    expect(await ledgerJobs()).toEqual([]);

    refusing = false;
    await waitFor(
      "the prepare-receiver job",
      async () => {
        await s.sending.anvil.mine(1);
        return s.queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey);
      },
      10_000,
      100,
    );
    expect(await ledgerJobs()).toEqual([
      {
        chainId: SENDING,
        hash: prepared.receipt.hash,
        source: "poller",
        transactionId: prepared.transactionId.toLowerCase(),
      },
    ]);
    expect((await storedCursor(s, SENDING))?.block ?? -1).toBeGreaterThanOrEqual(prepared.receipt.blockNumber);
    await producerQueue.close();
  });

  it("without a ledger section nothing is named: the ledger queue has no key in Redis", async () => {
    await startTestPollers(s, pollerConfig(s, s.prefix));
    const prepared = await userPrepare(s, { user: USER });
    await waitFor("the prepare-receiver job", () =>
      s.queues.job(RECEIVING, TX_JOB.prepareReceiver, prepared.transferKey),
    );
    expect(await s.queues.redis.keys(`${s.prefix}:${LEDGER_QUEUE_NAME}:*`)).toEqual([]);
  });
});

describe("poller names this router's events to the ledger queue through the subgraph source", () => {
  const s = usePollerSuite("poller-ledger-subgraph");
  let servers: SubgraphServer[] = [];

  beforeAll(async () => {
    for (const chain of [s.sending, s.receiving]) {
      servers.push(
        await startSubgraphServer({
          rpcUrl: chain.anvil.url,
          chainId: chain.chainId,
          transactionManager: chain.deployment.transactionManager,
        }),
      );
    }
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    servers = [];
  });

  it("the subgraph's prepare and fulfill hashes are named, the same as the chain's", async () => {
    const config = ledgerConfig(s, s.prefix, {
      subgraph: { [SENDING]: servers[0].url, [RECEIVING]: servers[1].url },
      subgraphSyncBuffer: 5,
    });
    await startTestPollers(s, config);
    const ledgerQueue = new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, {
      connection: s.queues.redis,
      prefix: s.prefix,
    });
    try {
      const prepared = await userPrepare(s, { user: USER });
      const receiverPrepare = await routerPrepareReceiver(s, prepared);
      const fulfilled = await userFulfill(s, prepared, receiverPrepare);
      const id = prepared.transactionId.toLowerCase();
      const expected = [
        { chainId: SENDING, hash: prepared.receipt.hash, source: "poller" as const, transactionId: id },
        { chainId: RECEIVING, hash: receiverPrepare.hash, source: "poller" as const, transactionId: id },
        { chainId: RECEIVING, hash: fulfilled.receipt.hash, source: "poller" as const, transactionId: id },
      ].sort((a, b) => `${a.chainId}${a.hash}`.localeCompare(`${b.chainId}${b.hash}`));
      await waitFor(
        "the three transactions named",
        async () => {
          await s.receiving.anvil.mine(1);
          return (await ledgerJobsOf(ledgerQueue)).length >= 3;
        },
        15_000,
        100,
      );
      expect(await ledgerJobsOf(ledgerQueue)).toEqual(expected);
      // Read through the subgraph, not the logs: every tick of both pollers used it.
      const sources = new Set(
        s.logs
          .lines()
          .filter((l) => l.at === "poller.tick")
          .map((l) => l.source),
      );
      expect([...sources]).toEqual(["subgraph"]);
    } finally {
      await ledgerQueue.close();
    }
  });
});

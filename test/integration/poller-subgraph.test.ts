import { TX_JOB } from "../../shared/queues";
import { startSubgraphServer, type SubgraphServer } from "../harness/subgraph-server";
import {
  AMOUNT,
  RECEIVING,
  SENDING,
  pollerConfig,
  routerPrepareReceiver,
  startTestPollers,
  syncedPast,
  usePollerSuite,
  userFulfill,
  userPrepare,
  type UserPrepared,
  FAST_DETECTION_BOUND_MS,
  enqueueLogged,
} from "./poller-fixture";
import { waitFor } from "../harness/wait";

/** (e) The same detection through the subgraph source, served by the test GraphQL server over anvil's logs. */

const USER = 7;
const SYNC_BUFFER = 5;

describe("poller with subgraphs (test GraphQL server over anvil logs)", () => {
  const s = usePollerSuite("poller-subgraph");
  let servers: Record<number, SubgraphServer>;

  const switches = (chainId: number): unknown[] =>
    s.logs
      .lines()
      .filter((l) => l.at === "poller.source" && l.chainId === chainId)
      .map((l) => l.source);

  beforeAll(async () => {
    servers = {
      [SENDING]: await startSubgraphServer({
        rpcUrl: s.sending.anvil.url,
        chainId: SENDING,
        transactionManager: s.sending.deployment.transactionManager,
      }),
      [RECEIVING]: await startSubgraphServer({
        rpcUrl: s.receiving.anvil.url,
        chainId: RECEIVING,
        transactionManager: s.receiving.deployment.transactionManager,
      }),
    };
  });

  beforeEach(async () => {
    s.afterTest(() => {
      for (const server of Object.values(servers)) {
        server.setLag(0);
        server.setFailing(false);
      }
    });
    const config = pollerConfig(s, s.prefix, {
      subgraph: { [SENDING]: servers[SENDING].url, [RECEIVING]: servers[RECEIVING].url },
      subgraphSyncBuffer: SYNC_BUFFER,
    });
    await startTestPollers(s, config);
  });

  afterAll(async () => {
    await Promise.all(Object.values(servers ?? {}).map((server) => server.stop()));
  });

  const prepareJob = (p: UserPrepared) => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey);

  it("detects a prepare through the subgraph, falls back to logs beyond the sync buffer and comes back, logging each switch once", async () => {
    const viaSubgraph = await userPrepare(s, { user: USER });
    const job = await waitFor("prepare-receiver via subgraph", () => prepareJob(viaSubgraph), 10_000);
    expect(job.timestamp - viaSubgraph.minedAtMs).toBeLessThan(FAST_DETECTION_BOUND_MS);
    const block = await s.sending.provider.getBlock(viaSubgraph.receipt.blockNumber);
    expect(job.data).toEqual({
      chainId: RECEIVING,
      sender: {
        chainId: SENDING,
        txData: {
          ...viaSubgraph.invariant,
          amount: AMOUNT.toString(),
          expiry: viaSubgraph.bid.expiry,
          preparedBlockNumber: viaSubgraph.receipt.blockNumber,
        },
        encryptedCallData: "0x",
        encodedBid: viaSubgraph.encodedBid,
        bidSignature: viaSubgraph.bidSignature.toLowerCase(),
        prepareTransactionHash: viaSubgraph.receipt.hash,
        preparedTimestamp: block?.timestamp,
      },
    });
    expect(await enqueueLogged(s.logs, viaSubgraph.transferKey)).toEqual([
      expect.objectContaining({ source: "subgraph", action: "prepare-receiver" }),
    ]);
    expect(servers[SENDING].operations()).toEqual(
      expect.arrayContaining(["GetBlockNumber", "GetSenderTransactions", "GetReceiverTransactions"]),
    );

    // The subgraph lags beyond the buffer: the chain's own logs take over, and the transfer is still seen.
    servers[SENDING].setLag(SYNC_BUFFER + 10);
    await s.sending.anvil.mine(SYNC_BUFFER + 15);
    const viaLogs = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver via logs", () => prepareJob(viaLogs), 10_000);
    expect(await enqueueLogged(s.logs, viaLogs.transferKey)).toEqual([expect.objectContaining({ source: "logs" })]);

    servers[SENDING].setLag(0);
    await s.sending.anvil.mine(1);
    await waitFor(
      "switch back to the subgraph",
      async () => (switches(SENDING).length === 3 ? true : undefined),
      10_000,
    );
    await s.sending.anvil.mine(3);
    // Ticks over those blocks, done: a further source switch would have been logged by now.
    await syncedPast(s.queues, s.prefix, SENDING, await s.sending.provider.getBlockNumber());
    expect(switches(SENDING)).toEqual(["subgraph", "logs", "subgraph"]);
    expect(switches(RECEIVING)).toEqual(["subgraph"]);
    expect(await s.queues.count(RECEIVING)).toBe(2);
  });

  it("falls back to logs when every subgraph fails, and follows a receiving fulfill through GetTransactionsWithRouter", async () => {
    servers[SENDING].setFailing(true);
    const prepared = await userPrepare(s, { user: USER });
    await waitFor("prepare-receiver via logs", () => prepareJob(prepared), 10_000);
    expect(await enqueueLogged(s.logs, prepared.transferKey)).toEqual([expect.objectContaining({ source: "logs" })]);
    servers[SENDING].setFailing(false);

    const receiverPrepare = await routerPrepareReceiver(s, prepared);
    // The receiving side must be stored as Prepared before it is fulfilled, so its fulfill is a change the
    // subgraph source has to look up by id (it drops out of the open list).
    await waitFor("receiving side stored", async () =>
      (await s.queues.redis.keys(`${s.prefix}:router:transfer:${RECEIVING}:*`)).length > 0 ? true : undefined,
    );
    const { signature, receipt: fulfill } = await userFulfill(s, prepared, receiverPrepare);

    const job = await waitFor(
      "fulfill-sender",
      () => s.queues.job(SENDING, TX_JOB.fulfillSender, prepared.transferKey),
      10_000,
    );
    expect(job.data).toMatchObject({
      chainId: SENDING,
      signature: signature.toLowerCase(),
      relayerFee: "0",
      receiverFulfillTransactionHash: fulfill.hash,
    });
    expect(servers[RECEIVING].operations()).toContain("GetTransactionsWithRouter");
  });
});

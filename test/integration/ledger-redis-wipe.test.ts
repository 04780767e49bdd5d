import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { createApp } from "../../services/admin/app";
import { closeServer, listen } from "../../services/admin/listen";
import type { AdminOperations } from "../../services/admin/types";
import { startLedger } from "../../services/ledger/start-ledger";
import { createLedgerPool } from "../../shared/ledger/database";
import { readSwapRows } from "../../shared/ledger/swap-reads";
import { createLogger } from "../../shared/logging/create-logger";
import { swapViewOf } from "../../shared/protocol/ledger";
import { bookTransactionJobId } from "../../shared/queues/ledger-jobs";
import { useLedgerSwapSuite } from "./ledger-swap-fixture";

const logger = createLogger({ level: "silent", service: "ledger" });

describe("the books survive a Redis wipe (anvil x2 + NXTP, redis, PostgreSQL)", () => {
  const suite = useLedgerSwapSuite("ledger_redis_wipe");

  it("FLUSHALL and a ledger restart leave every row and GET /ledger as they were; a transaction named again is not booked twice", async () => {
    const reader = createLedgerPool({ ledger: suite.config.ledger!, logger, mode: "reader", service: "admin" });
    const refused = async (): Promise<never> => {
      throw new Error("not used by this test");
    };
    const server: Server = await listen(
      createApp({
        config: suite.config,
        logger,
        signerAddress: suite.signer,
        operations: { removeLiquidity: refused, cancelSender: refused } as unknown as AdminOperations,
        ledger: async (id) =>
          swapViewOf({ transactionId: id, signer: suite.signer, ...(await readSwapRows(reader, id)) }),
      }),
      "127.0.0.1",
      0,
    );
    const getSwap = async (id: string) => {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/ledger/${id}`, {
        headers: { authorization: `Bearer ${suite.config.adminToken}` },
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const dump = async () => ({
      transactions: (await suite.pool.query("SELECT * FROM ledger_transactions ORDER BY chain_id, hash")).rows,
      events: (await suite.pool.query("SELECT * FROM ledger_events ORDER BY chain_id, tx_hash, log_index")).rows,
    });
    const redis = new Redis(suite.s.redisUrl);
    let ledger = await startLedger({ config: suite.config, logger, env: {} });
    try {
      const txs = [...(await suite.liquidityOps()), ...(await suite.swap(9))];
      for (const tx of txs) await suite.name(tx);
      for (const tx of txs) await suite.waitDone(tx);
      const prepared = await suite.pool.query<{ transaction_id: string }>(
        "SELECT transaction_id FROM ledger_events WHERE side IS NOT NULL LIMIT 1",
      );
      const transactionId = prepared.rows[0].transaction_id;
      const before = await dump();
      const swapBefore = await getSwap(transactionId);
      expect(swapBefore.status).toBe(200);
      expect(swapBefore.body).toMatchObject({ status: "claimed" });
      expect(before.transactions).toHaveLength(4);
      expect(before.events).toHaveLength(6);

      // Redis loses everything: the queue, its completed jobs, their ids.
      await ledger.stop();
      expect(await redis.flushall()).toBe("OK");
      expect(await redis.dbsize()).toBe(0);
      ledger = await startLedger({ config: suite.config, logger, env: {} });

      expect(await dump()).toEqual(before);
      expect(await getSwap(transactionId)).toEqual(swapBefore);

      // A producer names one again (its job id is free after the wipe): the job runs and inserts nothing.
      const again = txs[txs.length - 1];
      expect(await suite.queue.getJob(bookTransactionJobId(again.chainId, again.hash))).toBeUndefined();
      await suite.name(again);
      await suite.waitDone(again);
      const job = await suite.queue.getJob(bookTransactionJobId(again.chainId, again.hash));
      expect(job?.returnvalue).toEqual({ outcome: "known", transactionInserted: false, eventsInserted: 0 });
      expect(await dump()).toEqual(before);
      expect(await getSwap(transactionId)).toEqual(swapBefore);
    } finally {
      await ledger.stop();
      redis.disconnect();
      await closeServer(server);
      await reader.end();
    }
  });
});

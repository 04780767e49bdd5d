import { hexlify, randomBytes } from "ethers";
import type { PreparedTransferRecord } from "../../shared/protocol/types";
import { TX_JOB, transferKey } from "../../shared/queues";
import { pollerCursorKey } from "../../shared/coordination/keys";
import { createTransferStore } from "../../shared/transfers/transfer-store";
import {
  AMOUNT,
  RECEIVING,
  SENDING,
  nextTick,
  pollerConfig,
  startTestPollers,
  syncedPast,
  usePollerSuite,
  userPrepare,
  type UserPrepared,
} from "./poller-fixture";
import { waitFor } from "../harness/wait";

/**
 * Re-orgs, the cursor's side: the logs source stores the hash of the block it read up to, rewinds when that
 * block was re-orged away, and starts again from the start block when the stored cursor is ahead of the chain
 * (a chain reset or redeploy under an existing Redis) instead of waiting for ever.
 */

const USER = 5;

describe("poller log cursor (re-org, chain reset; anvil 1337 → 1338, redis)", () => {
  const s = usePollerSuite("poller-reorg");
  const prepareJob = (p: UserPrepared) =>
    waitFor("prepare-receiver job", () => s.queues.job(RECEIVING, TX_JOB.prepareReceiver, p.transferKey), 15_000);

  it("rewinds past a re-org below its cursor and stores what the new chain has", async () => {
    await startTestPollers(s, pollerConfig(s, s.prefix));
    const snapshot = await s.sending.anvil.rpc<string>("evm_snapshot");
    const orphan = await userPrepare(s, { user: USER });
    await syncedPast(s.queues, s.prefix, SENDING, orphan.receipt.blockNumber);
    const cursorBefore = JSON.parse((await s.queues.redis.get(pollerCursorKey(s.prefix, SENDING))) ?? "null") as {
      block: number;
      hash: string;
    };
    expect(cursorBefore).toMatchObject({ block: orphan.receipt.blockNumber, hash: orphan.receipt.blockHash });

    // The re-org: the orphan's blocks are replaced by as many blocks holding another transfer.
    await s.sending.anvil.rpc("evm_revert", [snapshot]);
    const replacement = await userPrepare(s, { user: 6 });
    expect(replacement.receipt.blockNumber).toBe(orphan.receipt.blockNumber);

    const job = await prepareJob(replacement);
    expect(job.data).toMatchObject({
      sender: {
        txData: {
          transactionId: replacement.transactionId.toLowerCase(),
          preparedBlockNumber: replacement.receipt.blockNumber,
        },
      },
    });
    const rewind = s.logs
      .lines()
      .find(
        (l) =>
          l.at === "poller.logs" &&
          l.message === "re-org below the log cursor: rewinding and reading those blocks again",
      );
    expect(rewind).toMatchObject({
      level: "warn",
      chainId: SENDING,
      storedCursor: orphan.receipt.blockNumber,
      checkpointMatched: true,
    });
    expect(rewind?.rewoundTo).toBeLessThan(orphan.receipt.blockNumber - 2); // before the orphan's mint and approve too
    // The orphan's record is still Prepared in the store but no longer on chain: held and reported, not acted on again.
    const held = await waitFor("orphan reported", async () =>
      s.logs
        .lines()
        .find((l) => l.at === "poller.reconcile" && l.transferKey === orphan.transferKey && l.level === "error"),
    );
    expect(held).toMatchObject({ side: "sending", verdict: "store-ahead", storedStatus: "Prepared" });
    const cursorAfter = JSON.parse((await s.queues.redis.get(pollerCursorKey(s.prefix, SENDING))) ?? "null") as {
      block: number;
      hash: string;
    };
    expect(cursorAfter.hash).toBe((await s.sending.provider.getBlock(cursorAfter.block))?.hash);
  });

  const otherChainHash = (): string => hexlify(randomBytes(32));
  /** The cursor a poller of the chain before its reset left in Redis, in each stored form. */
  const resetCursors: Array<[string, (head: number) => string]> = [
    [
      "a cursor without a hash (nothing to probe with: reset)",
      (head) => JSON.stringify({ block: head + 1_000, checkpoints: [{ block: head + 1_000 }], updatedAtMs: 1 }),
    ],
    [
      "a hashed cursor whose older checkpoint the chain has under another hash",
      (head) =>
        JSON.stringify({
          block: head + 1_000,
          hash: otherChainHash(),
          checkpoints: [
            { block: head + 1_000, hash: otherChainHash() },
            { block: head - 1, hash: otherChainHash() },
          ],
          updatedAtMs: 1,
        }),
    ],
    [
      "a hashed cursor above every block of the chain, with another genesis",
      (head) =>
        JSON.stringify({
          block: head + 1_000,
          hash: otherChainHash(),
          checkpoints: [{ block: head + 1_000, hash: otherChainHash() }],
          updatedAtMs: 1,
          genesisHash: otherChainHash(),
        }),
    ],
  ];

  it.each(resetCursors)(
    "recovers from a stored cursor ahead of the chain head (chain reset; %s): logs an error, reads from the start block, holds stale records",
    async (_what, cursorOf) => {
      const head = await s.sending.provider.getBlockNumber();
      await s.queues.redis.set(pollerCursorKey(s.prefix, SENDING), cursorOf(head));
      // A record of the chain before its reset: not on this chain.
      const store = createTransferStore(s.queues.redis, s.prefix);
      const stale = await userPrepare(s, { user: USER });
      const staleRecord: PreparedTransferRecord = {
        status: "Prepared",
        chainId: SENDING,
        txData: {
          ...stale.invariant,
          transactionId: hexlify(randomBytes(32)),
          amount: AMOUNT.toString(),
          expiry: stale.bid.expiry,
          preparedBlockNumber: stale.receipt.blockNumber,
        },
        encryptedCallData: "0x",
        encodedBid: stale.encodedBid,
        bidSignature: stale.bidSignature,
        prepareTransactionHash: stale.receipt.hash,
        preparedTimestamp: 1,
      };
      await store.put(staleRecord);
      const staleKey = transferKey(staleRecord.txData.transactionId, staleRecord.txData.user);

      await startTestPollers(s, pollerConfig(s, s.prefix));
      const after = await userPrepare(s, { user: USER });
      await prepareJob(after);
      await nextTick(s, SENDING); // the tick that held the stale record went on to its decisions

      const reset = s.logs.lines().filter((l) => l.at === "poller.logs" && l.level === "error");
      expect(reset).toEqual([expect.objectContaining({ chainId: SENDING, storedCursor: head + 1_000 })]);
      expect(s.logs.lines().find((l) => l.at === "poller.reconcile" && l.transferKey === staleKey)).toMatchObject({
        level: "error",
        verdict: "store-ahead",
      });
      expect(await s.queues.job(RECEIVING, TX_JOB.prepareReceiver, staleKey)).toBeUndefined();
      expect(await s.queues.job(SENDING, TX_JOB.cancelSender, staleKey)).toBeUndefined();
    },
  );
});

import { ZeroAddress, keccak256 } from "ethers";
import type { TransferRecord } from "../../shared/protocol/types";
import { transferKey } from "../../shared/queues";
import { openTransfersKey, transferRecordKey } from "../../shared/coordination/keys";
import { createBalanceStore } from "../../shared/transfers/balance-store";
import { createTransferStore, type TransferStore } from "../../shared/transfers/transfer-store";
import { MAX_TIMEOUT_SEC, RECEIVER_EXPIRY_OFFSET_SEC } from "../../shared/protocol/expiry";
import { MIN_RETENTION_SEC, RETENTION_MARGIN_SEC } from "../../shared/protocol/retention";
import { useRedis } from "../harness/redis";
import { uniquePrefix } from "../harness/prefix";

const USER = "0x1111111111111111111111111111111111111111";
const DAY_SEC = 86_400;

function prepared(id: number, expiry: number): TransferRecord {
  return {
    status: "Prepared",
    chainId: 1337,
    txData: {
      receivingChainTxManagerAddress: USER,
      user: USER,
      router: USER,
      initiator: USER,
      sendingAssetId: ZeroAddress,
      receivingAssetId: ZeroAddress,
      sendingChainFallback: USER,
      callTo: ZeroAddress,
      receivingAddress: USER,
      sendingChainId: 1337,
      receivingChainId: 1338,
      callDataHash: keccak256("0x"),
      transactionId: "0x" + id.toString(16).padStart(64, "0"),
      amount: "10",
      expiry,
      preparedBlockNumber: 5,
    },
    encryptedCallData: "0x",
    encodedBid: "0x01",
    bidSignature: "0x02",
    prepareTransactionHash: "0x" + "cd".repeat(32),
    preparedTimestamp: 50,
  };
}

function cancelled(record: TransferRecord): TransferRecord {
  return {
    ...record,
    encodedBid: "",
    status: "Cancelled",
    cancelTransactionHash: "0x" + "12".repeat(32),
    cancelBlockNumber: 9,
  };
}

describe("transfer store (real redis)", () => {
  const suite = useRedis();
  let store: TransferStore;
  let prefix: string;

  beforeEach(() => {
    prefix = uniquePrefix();
    store = createTransferStore(suite.redis, prefix);
  });

  it("indexes Prepared records by expiry and drops them from the index when they settle, never reopening them", async () => {
    const [late, early] = [prepared(1, 200), prepared(2, 100)];
    await expect(store.put(late)).resolves.toBe("created");
    await expect(store.put(early)).resolves.toBe("created");
    await expect(store.put(early)).resolves.toBe("unchanged");
    expect((await store.listOpen(1337)).map((r) => r.txData.expiry)).toEqual([100, 200]);

    await expect(store.put(cancelled(early))).resolves.toBe("updated");
    expect((await store.listOpen(1337)).map((r) => r.txData.expiry)).toEqual([200]);
    await expect(
      store.get(1337, early.txData.transactionId, USER.toUpperCase().replace("0X", "0x")),
    ).resolves.toMatchObject({
      status: "Cancelled",
      encodedBid: "0x01",
      cancelBlockNumber: 9,
    });
    await expect(store.put(early)).resolves.toBe("stale");
    expect(
      await suite.redis.zscore(openTransfersKey(prefix, 1337), transferKey(early.txData.transactionId, USER)),
    ).toBeNull();
    expect(
      await suite.redis.exists(transferRecordKey(prefix, 1337, transferKey(early.txData.transactionId, USER))),
    ).toBe(1);
  });

  it("keeps an open record for ever, and a closed one until both sides expired plus a day", async () => {
    const nowSec = Math.floor(Date.now() / 1000);
    const expiry = nowSec + 3 * DAY_SEC + 3600; // the SDK's usual sending expiry
    const record = prepared(3, expiry);
    const key = transferRecordKey(prefix, 1337, transferKey(record.txData.transactionId, USER));
    await store.put(record);
    expect(await suite.redis.pttl(key)).toBe(-1);
    await store.put(cancelled(record));
    const ttlMs = await suite.redis.pttl(key);
    const wantedMs = (expiry + RECEIVER_EXPIRY_OFFSET_SEC + RETENTION_MARGIN_SEC - nowSec) * 1000;
    expect(ttlMs).toBeGreaterThan(wantedMs - 60_000);
    expect(ttlMs).toBeLessThanOrEqual(wantedMs);
    // Far less than the contract's 30-day maximum that every record used to be kept for.
    expect(ttlMs).toBeLessThan(6 * DAY_SEC * 1000);
    // A record first seen closed (its prepare before the cursor's start), long expired: still kept a day.
    const seenClosed = cancelled(prepared(4, 400));
    await store.put(seenClosed);
    const expiredTtlMs = await suite.redis.pttl(
      transferRecordKey(prefix, 1337, transferKey(seenClosed.txData.transactionId, USER)),
    );
    expect(expiredTtlMs).toBeGreaterThan(MIN_RETENTION_SEC * 1000 - 60_000);
    expect(expiredTtlMs).toBeLessThanOrEqual(MIN_RETENTION_SEC * 1000);
    // The longest transfer the contract allows is kept past its end, never longer.
    const longest = cancelled(prepared(5, nowSec + MAX_TIMEOUT_SEC));
    await store.put(longest);
    expect(
      await suite.redis.pttl(transferRecordKey(prefix, 1337, transferKey(longest.txData.transactionId, USER))),
    ).toBeGreaterThan((MAX_TIMEOUT_SEC + DAY_SEC) * 1000);
  });

  it("reads several sides in one call, in the order asked, with none where there is no record", async () => {
    const [a, b] = [prepared(6, 600), prepared(7, 700)];
    await store.put(a);
    await store.put(cancelled(b));
    const side = (r: TransferRecord, chainId = r.chainId) => ({
      chainId,
      transactionId: r.txData.transactionId,
      user: r.txData.user,
    });
    const found = await store.getMany([side(b), side(a, 1338), side(a)]);
    expect(found).toEqual([await store.get(1337, b.txData.transactionId, USER), undefined, a]);
    expect(found[0]?.status).toBe("Cancelled");
    await expect(store.getMany([])).resolves.toEqual([]);
  });

  it("keeps record and index consistent under concurrent writers of the same transfer", async () => {
    const record = prepared(3, 300);
    const outcomes = await Promise.all([
      store.put(record),
      store.put(cancelled(record)),
      store.put(record),
      store.put(cancelled(record)),
    ]);
    expect(outcomes.filter((o) => o === "created")).toHaveLength(1);
    const stored = await store.get(1337, record.txData.transactionId, USER);
    const open = await store.listOpen(1337);
    expect(stored?.status === "Prepared").toBe(open.length === 1);
    await store.put(cancelled(record));
    await expect(store.listOpen(1337)).resolves.toEqual([]);
  });

  it("stores heads and balances with their timestamps", async () => {
    await store.setHead(1338, { blockNumber: 10, timestamp: 1000, syncedBlock: 9, updatedAtMs: 5 });
    await expect(store.getHead(1338)).resolves.toEqual({
      blockNumber: 10,
      timestamp: 1000,
      syncedBlock: 9,
      updatedAtMs: 5,
    });
    await expect(store.getHead(1)).resolves.toBeUndefined();
    const balances = createBalanceStore(suite.redis, prefix);
    await balances.setRouterBalance(1338, "0xAbCdEf0000000000000000000000000000000001", 123n, 7);
    await expect(balances.getRouterBalance(1338, "0xabcdef0000000000000000000000000000000001")).resolves.toEqual({
      amount: 123n,
      updatedAtMs: 7,
    });
    await balances.setGasBalance(1338, 10n ** 20n);
    await expect(balances.getGasBalance(1338)).resolves.toMatchObject({ amount: 10n ** 20n });
    await expect(balances.getGasBalance(1)).resolves.toBeUndefined();
  });
});

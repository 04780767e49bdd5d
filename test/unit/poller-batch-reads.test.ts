import type { TransferRecord } from "../../shared/protocol/types";
import type { TransferSide } from "../../shared/transfers/transfer-store";
import type { PollerContext } from "../../services/poller/context";
import { oncePerChain, prefetchCounterparts } from "../../services/poller/batch-reads";

/** The poller's batch reads against a store that records what it was asked (plain key/value logic, no Redis). */

const SENDING = 1337;
const RECEIVING = 1338;
const UNCONFIGURED = 9999;

function side(chainId: number, id: number, receivingChainId = RECEIVING): TransferRecord {
  return {
    chainId,
    status: "Prepared",
    txData: {
      transactionId: `0x${id.toString(16).padStart(64, "0")}`,
      user: "0x00000000000000000000000000000000000000Aa",
      sendingChainId: SENDING,
      receivingChainId,
    },
  } as unknown as TransferRecord;
}

function contextWith(store: {
  getMany(s: readonly TransferSide[]): Promise<unknown[]>;
  get(...a: unknown[]): Promise<unknown>;
}) {
  return {
    chainId: SENDING,
    config: { chainConfig: { [SENDING]: {}, [RECEIVING]: {} } },
    store,
  } as unknown as PollerContext;
}

describe("poller batch reads", () => {
  it("reads the other side of a batch's records in one call, and none for a chain that is not ours", async () => {
    const receiver = side(RECEIVING, 1);
    const asked: TransferSide[][] = [];
    let singleReads = 0;
    const ctx = contextWith({
      getMany: async (sides) => {
        asked.push([...sides]);
        return sides.map((s) => (s.transactionId === receiver.txData.transactionId ? receiver : undefined));
      },
      get: async () => {
        singleReads += 1;
        return undefined;
      },
    });
    const batch = [side(SENDING, 1), side(SENDING, 2), side(SENDING, 3, UNCONFIGURED), undefined];
    const counterpartOf = await prefetchCounterparts(ctx, batch);
    expect(asked).toHaveLength(1);
    expect(asked[0].map((s) => s.chainId)).toEqual([RECEIVING, RECEIVING]);
    await expect(counterpartOf(batch[0] as TransferRecord)).resolves.toBe(receiver);
    await expect(counterpartOf(batch[1] as TransferRecord)).resolves.toBeUndefined();
    await expect(counterpartOf(batch[2] as TransferRecord)).resolves.toBeUndefined();
    expect(singleReads).toBe(0);
  });

  it("reads each record on its own when the batch read failed, and for a record it did not prefetch", async () => {
    const receiver = side(RECEIVING, 4);
    const singles: unknown[][] = [];
    const ctx = contextWith({
      getMany: async () => Promise.reject(new Error("redis: connection lost")),
      get: async (...args) => {
        singles.push(args);
        return receiver;
      },
    });
    const counterpartOf = await prefetchCounterparts(ctx, [side(SENDING, 4)]);
    await expect(counterpartOf(side(SENDING, 4))).resolves.toBe(receiver);
    await expect(counterpartOf(side(SENDING, 5))).resolves.toBe(receiver);
    expect(singles.map((a) => a[0])).toEqual([RECEIVING, RECEIVING]);
  });

  it("reads once per chain, and shares a failure with every caller", async () => {
    let reads = 0;
    const once = oncePerChain(async (chainId) => {
      reads += 1;
      if (chainId === UNCONFIGURED) throw new Error("no provider");
      return chainId * 2;
    });
    await expect(Promise.all([once(SENDING), once(SENDING), once(RECEIVING)])).resolves.toEqual([
      2 * SENDING,
      2 * SENDING,
      2 * RECEIVING,
    ]);
    await expect(once(UNCONFIGURED)).rejects.toThrow("no provider");
    await expect(once(UNCONFIGURED)).rejects.toThrow("no provider");
    expect(reads).toBe(3);
  });
});

import type { TransferRecord } from "../../shared/protocol/types";
import type { TransferSide } from "../../shared/transfers/transfer-store";
import type { PollerContext } from "./context";

/**
 * Reads shared by one batch of the tick's decisions (decide-open.ts, DECISION_BATCH_SIZE records): one head read per
 * chain for the batch's reconciles, and one MGET for the other side of every record. Read one record at a time,
 * each was a round trip per open transfer and tick, seconds per tick between hosts far apart.
 */

/**
 * `read(chainId)` at most once per chain for as long as the returned function is kept: a batch's heads, a tick's
 * view of each receiving chain. Every caller awaits the one promise, so a failed read fails each of them.
 */
export function oncePerChain<T>(read: (chainId: number) => Promise<T>): (chainId: number) => Promise<T> {
  const reads = new Map<number, Promise<T>>();
  return (chainId) => {
    let found = reads.get(chainId);
    if (found === undefined) {
      found = read(chainId);
      reads.set(chainId, found);
    }
    return found;
  };
}

/** Each chain's head, read on the first ask and shared by one batch of reconciles. */
export function headsOnce(ctx: PollerContext): (chainId: number) => Promise<number> {
  return oncePerChain((chainId) => ctx.providerFor(chainId).getBlockNumber());
}

/** The other side's record of a record of this chain; undefined when there is none or its chain is not ours. */
export type CounterpartOf = (record: TransferRecord) => Promise<TransferRecord | undefined>;

/**
 * The other side of every record of a batch, read in one MGET once the batch's reconcile has stored what it
 * repaired: a record decided later in the batch reads it a few decisions late, as a read of its own did. A
 * record that was not prefetched, or a prefetch that failed, is read on its own (a failure then fails only the
 * records whose own read fails, as before).
 */
export async function prefetchCounterparts(
  ctx: PollerContext,
  records: ReadonlyArray<TransferRecord | undefined>,
): Promise<CounterpartOf> {
  const sides = records.flatMap((record) => {
    const side = record === undefined ? undefined : otherSideOf(ctx, record);
    return side === undefined ? [] : [side];
  });
  const found = sides.length === 0 ? [] : await ctx.store.getMany(sides).catch(() => undefined);
  const prefetched = new Map(found === undefined ? [] : sides.map((side, i) => [sideKey(side), found[i]]));
  return async (record) => {
    const side = otherSideOf(ctx, record);
    if (side === undefined) {
      return undefined;
    }
    const key = sideKey(side);
    return prefetched.has(key) ? prefetched.get(key) : ctx.store.get(side.chainId, side.transactionId, side.user);
  };
}

function otherSideOf(ctx: PollerContext, record: TransferRecord): TransferSide | undefined {
  const { transactionId, user, sendingChainId, receivingChainId } = record.txData;
  const other =
    sendingChainId === ctx.chainId ? receivingChainId : receivingChainId === ctx.chainId ? sendingChainId : undefined;
  if (other === undefined || ctx.config.chainConfig[String(other)] === undefined) {
    return undefined; // an unconfigured chain has no side the router could read or act on
  }
  return { chainId: other, transactionId, user };
}

function sideKey(side: TransferSide): string {
  return `${side.chainId}:${side.transactionId.toLowerCase()}:${side.user.toLowerCase()}`;
}

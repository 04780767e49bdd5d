import type { Redis } from "ioredis";
import { fenceArgsOf, fencedOut, type FenceSource } from "../../../shared/coordination/lease";
import { FENCED_SET } from "../../../shared/redis/common-scripts";

/** One block the logs source read up to, with the hash it had then. */
export interface BlockCheckpoint {
  readonly block: number;
  /** Undefined before any block (−1), or when the provider had no block at that height as it was stored. */
  readonly hash?: string;
}

/**
 * The logs source's cursor as stored in `cursor:<chainId>` (JSON): the last block whose logs are stored, its
 * hash, and the last few positions before it, so a re-org can be rewound to the newest one still on chain.
 */
export interface StoredCursor extends BlockCheckpoint {
  /** Newest first, the current position included. */
  readonly checkpoints: readonly BlockCheckpoint[];
  readonly updatedAtMs: number;
  /**
   * Block 0's hash on the chain the cursor was read from: tells a chain reset (another genesis) from a provider
   * that lags behind every checkpoint. Undefined when the provider returned no block 0 as the cursor was reset.
   */
  readonly genesisHash?: string;
}

/** Positions kept for re-org rewinds; with one range per tick, about this many ticks back. */
export const CURSOR_CHECKPOINTS = 16;

export interface LogCursorStore {
  load(): Promise<StoredCursor | undefined>;
  save(position: BlockCheckpoint): Promise<StoredCursor>;
  /**
   * Replaces the stored cursor by `position` alone (after a reset or a rewind: older checkpoints are void), on
   * the chain whose genesis is `genesisHash` (default: the one stored).
   */
  reset(position: BlockCheckpoint, genesisHash?: string): Promise<StoredCursor>;
  /** Stores the chain's genesis hash with the loaded cursor (one reset while the provider gave no block 0). */
  setGenesis(genesisHash: string): Promise<StoredCursor>;
}

/**
 * `fence` (the poller lease): every save and reset checks it in the same script as the write, so a poller that
 * was paused past its lease can never move the cursor back under the active one. Without it, writes are unfenced.
 */
export function createLogCursorStore(redis: Redis, key: string, fence?: FenceSource): LogCursorStore {
  let last: StoredCursor | undefined;
  const write = async (cursor: StoredCursor): Promise<StoredCursor> => {
    const f = fenceArgsOf(fence, key, "log cursor");
    const call = { keys: { target: key, lease: f.key }, args: { value: JSON.stringify(cursor), fenceValue: f.value } };
    if (!(await FENCED_SET.run(redis, call))) {
      throw fencedOut(fence, "log cursor");
    }
    last = cursor;
    return cursor;
  };
  return {
    load: async () => {
      last = parseCursor(await redis.get(key));
      return last;
    },
    save: (position) => {
      const older = (last?.checkpoints ?? []).filter((c) => c.block < position.block);
      const checkpoints = [position, ...older].slice(0, CURSOR_CHECKPOINTS);
      return write({ ...position, checkpoints, updatedAtMs: Date.now(), ...genesisOf(last?.genesisHash) });
    },
    reset: (position, genesisHash = last?.genesisHash) =>
      write({ ...position, checkpoints: [position], updatedAtMs: Date.now(), ...genesisOf(genesisHash) }),
    setGenesis: (genesisHash) => {
      if (last === undefined) {
        throw new Error("setGenesis before a cursor was loaded");
      }
      return write({ ...last, genesisHash });
    },
  };
}

function genesisOf(genesisHash: string | undefined): { genesisHash?: string } {
  return genesisHash === undefined ? {} : { genesisHash };
}

/** The stored cursor (the JSON `save` and `reset` write); anything else is an error naming what is wrong. */
export function parseCursor(stored: string | null): StoredCursor | undefined {
  if (stored === null) {
    return undefined;
  }
  const parsed = JSON.parse(stored) as Partial<StoredCursor> | null;
  if (parsed === null || typeof parsed !== "object" || typeof parsed.block !== "number") {
    throw new Error(`stored log cursor is not a cursor object with a block number: ${stored.slice(0, 80)}`);
  }
  const hash = typeof parsed.hash === "string" ? parsed.hash : undefined;
  const checkpoints = Array.isArray(parsed.checkpoints) ? parsed.checkpoints : [{ block: parsed.block, hash }];
  const genesis = typeof parsed.genesisHash === "string" ? parsed.genesisHash : undefined;
  return { block: parsed.block, hash, checkpoints, updatedAtMs: parsed.updatedAtMs ?? 0, ...genesisOf(genesis) };
}

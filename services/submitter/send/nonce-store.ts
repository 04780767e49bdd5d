import type { Redis } from "ioredis";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { nonceKey } from "../../../shared/coordination/keys";
import { defineScript, reply } from "../../../shared/redis/script-runner";
import { senderFenceArgs, senderFencedOut, type FenceSource } from "./fence";

/**
 * The next nonce of one (chain, signer), at `routerKey(prefix, "nonce", chainId, signerAddress)`, shared by
 * every submitter instance of the chain (only the sender lease holder writes it: services/submitter/lease).
 * It exists because a node's pending count can lag, or forget a transaction it dropped; the chain stays
 * the other half of the truth, so allocation takes the larger of the two.
 */
export interface NonceAllocation {
  readonly nonce: number;
  readonly stored?: number;
  readonly pending: number;
}

export interface NonceStore {
  readonly key: string;
  get(): Promise<number | undefined>;
  /** max(stored, chain pending count, atLeast, the in-process floor). */
  allocate(atLeast?: number): Promise<NonceAllocation>;
  /** Raises the stored next nonce to `next`; never lowers it (a late writer must not undo a newer send). */
  advanceTo(next: number): Promise<void>;
  /** Sets `to` only if the stored value is still `expected`; false when someone else moved it meanwhile. */
  resetIfUnchanged(expected: number, to: number): Promise<boolean>;
  /** The chain's pending transaction count of the signer. */
  pendingCount(): Promise<number>;
  /**
   * In-process floor, for the sender lease holder only: the next nonce after every one this process persisted a
   * transaction at (`reserve`) or found persisted at the start of its term (`setFloor`). With many jobs sending
   * in turn, a job whose broadcast failed keeps its nonce: the next job never signs a second transaction there.
   */
  reserve(nonce: number): void;
  setFloor(next: number): void;
}

/** Both writes are fenced by the sender lease (shared/redis/scripts/nonce-*.lua; -2: refused). */
const ADVANCE = defineScript({
  file: "nonce-advance",
  keys: ["nonce", "lease"],
  args: ["next", "fenceValue"],
  decode: reply.number,
});

const RESET = defineScript({
  file: "nonce-reset",
  keys: ["nonce", "lease"],
  args: ["expected", "to", "fenceValue"],
  decode: reply.number,
});

export function createNonceStore(params: {
  redis: Redis;
  prefix: string;
  chainId: number;
  signerAddress: string;
  provider: Pick<ChainProvider, "getTransactionCount">;
  /** The writer's sender lease (send/fence.ts); without it writes are not fenced. */
  fence?: FenceSource;
}): NonceStore {
  const { redis, provider, signerAddress } = params;
  const key = nonceKey(params.prefix, params.chainId, signerAddress);
  const get = async (): Promise<number | undefined> => {
    const value = await redis.get(key);
    return value === null ? undefined : Number(value);
  };
  const fenced = (): { key: string; value: string } => senderFenceArgs(params.fence, key, "next nonce");
  const checked = (result: number): number => {
    if (result === -2) {
      throw senderFencedOut(params.fence, "next nonce");
    }
    return result;
  };
  const pendingCount = (): Promise<number> => provider.getTransactionCount(signerAddress, "pending");
  let floor = 0;
  return {
    key,
    get,
    pendingCount,
    allocate: async (atLeast = 0) => {
      const [stored, pending] = await Promise.all([get(), pendingCount()]);
      return { nonce: Math.max(stored ?? 0, pending, atLeast, floor), stored, pending };
    },
    advanceTo: async (next) => {
      const fence = fenced();
      checked(
        await ADVANCE.run(redis, { keys: { nonce: key, lease: fence.key }, args: { next, fenceValue: fence.value } }),
      );
    },
    reserve: (nonce) => {
      floor = Math.max(floor, nonce + 1);
    },
    setFloor: (next) => {
      floor = next;
    },
    resetIfUnchanged: async (expected, to) => {
      const fence = fenced();
      const call = { keys: { nonce: key, lease: fence.key }, args: { expected, to, fenceValue: fence.value } };
      return checked(await RESET.run(redis, call)) === 1;
    },
  };
}

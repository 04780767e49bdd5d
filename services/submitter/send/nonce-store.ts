import type { Redis } from "ioredis";
import type { ChainProvider } from "../../../shared/chain/chain-provider";
import { nonceKey } from "../../../shared/queues";

/**
 * The next nonce of one (chain, signer), at `routerKey(prefix, "nonce", chainId, signerAddress)`, shared by
 * every submitter instance of the chain (only one is active at a time: the queue's global concurrency is 1).
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
  /** max(stored, chain pending count, atLeast). */
  allocate(atLeast?: number): Promise<NonceAllocation>;
  /** Raises the stored next nonce to `next`; never lowers it (a late writer must not undo a newer send). */
  advanceTo(next: number): Promise<void>;
  /** Sets `to` only if the stored value is still `expected`; false when someone else moved it meanwhile. */
  resetIfUnchanged(expected: number, to: number): Promise<boolean>;
  /** The chain's pending transaction count of the signer. */
  pendingCount(): Promise<number>;
}

const ADVANCE_SCRIPT = `
local current = tonumber(redis.call("GET", KEYS[1]) or "-1")
if current < tonumber(ARGV[1]) then redis.call("SET", KEYS[1], ARGV[1]) return 1 end
return 0
`;

const RESET_SCRIPT = `
if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("SET", KEYS[1], ARGV[2]) return 1 end
return 0
`;

export function createNonceStore(params: {
  redis: Redis;
  prefix: string;
  chainId: number;
  signerAddress: string;
  provider: Pick<ChainProvider, "getTransactionCount">;
}): NonceStore {
  const { redis, provider, signerAddress } = params;
  const key = nonceKey(params.prefix, params.chainId, signerAddress);
  const get = async (): Promise<number | undefined> => {
    const value = await redis.get(key);
    return value === null ? undefined : Number(value);
  };
  const pendingCount = (): Promise<number> => provider.getTransactionCount(signerAddress, "pending");
  return {
    key,
    get,
    pendingCount,
    allocate: async (atLeast = 0) => {
      const [stored, pending] = await Promise.all([get(), pendingCount()]);
      return { nonce: Math.max(stored ?? 0, pending, atLeast), stored, pending };
    },
    advanceTo: async (next) => {
      await redis.eval(ADVANCE_SCRIPT, 1, key, next);
    },
    resetIfUnchanged: async (expected, to) => Number(await redis.eval(RESET_SCRIPT, 1, key, expected, to)) === 1,
  };
}

import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import {
  auctionRateKey,
  bidReservationExpiryKey,
  bidReservationsKey,
  gasBalanceKey,
  routerBalanceKey,
} from "../queues";

/**
 * The auction's shared bookkeeping in Redis, so any number of auction instances never promise the same
 * liquidity twice (PROTOCOL.md weak point 3):
 * - a reservation per signed bid on the receiving (chain, asset), `amountReceived` for the transfer key,
 *   until `bidExpiry` (plus a grace, see the auction); pinned longer once the sending-side prepare is seen,
 *   released once the receiving prepare is stored and the balance read after it reflects the lock;
 * - the `requestLimit` stamp per (user, chains, assets).
 * One Lua script checks rate limit, freshness, liquidity and gas and takes the reservation and the stamp in
 * the same atomic step. Amounts are uint256 decimal strings: Lua numbers are doubles, so the script compares,
 * adds and subtracts them as digit strings, 14 digits at a time (exact in a double).
 */

/** Digit-string arithmetic for non-negative integers without leading zeros ("0" is zero). */
export const DIGIT_MATH_LUA = `
local CHUNK = 14
local BASE = 1e14
local function dnorm(a)
  a = string.gsub(a, '^0+', '')
  if a == '' then return '0' end
  return a
end
local function dcmp(a, b)
  if #a ~= #b then
    if #a < #b then return -1 end
    return 1
  end
  if a == b then return 0 end
  if a < b then return -1 end
  return 1
end
local function dchunks(a)
  local out = {}
  local i = #a
  while i > 0 do
    local from = i - CHUNK + 1
    if from < 1 then from = 1 end
    out[#out + 1] = tonumber(string.sub(a, from, i))
    i = from - 1
  end
  return out
end
local function djoin(parts)
  local out = {}
  for k = #parts, 1, -1 do
    if k == #parts then
      out[#out + 1] = string.format('%.0f', parts[k])
    else
      out[#out + 1] = string.format('%014.0f', parts[k])
    end
  end
  return dnorm(table.concat(out))
end
local function dadd(a, b)
  local x, y = dchunks(a), dchunks(b)
  local n = math.max(#x, #y)
  local parts, carry = {}, 0
  for k = 1, n do
    local s = (x[k] or 0) + (y[k] or 0) + carry
    if s >= BASE then carry = 1; s = s - BASE else carry = 0 end
    parts[k] = s
  end
  if carry > 0 then parts[n + 1] = carry end
  return djoin(parts)
end
-- a - b, floored at zero (a reservation total never goes negative, even after a foreign write).
local function dsub(a, b)
  if dcmp(a, b) <= 0 then return '0' end
  local x, y = dchunks(a), dchunks(b)
  local parts, borrow = {}, 0
  for k = 1, #x do
    local s = x[k] - (y[k] or 0) - borrow
    if s < 0 then s = s + BASE; borrow = 1 else borrow = 0 end
    parts[k] = s
  end
  return djoin(parts)
end
local function dvalid(a)
  return type(a) == 'string' and string.find(a, '^[0-9]+$') ~= nil
end
`;

/** Drops lapsed reservations (bounded per call; what is left over counts until a later call). */
const PRUNE_LUA = `
local function prune(hashKey, zsetKey, nowMs)
  local lapsed = redis.call('ZRANGEBYSCORE', zsetKey, '-inf', nowMs, 'LIMIT', 0, 1000)
  if #lapsed == 0 then return end
  local total = redis.call('HGET', hashKey, 'total') or '0'
  for _, member in ipairs(lapsed) do
    local amount = redis.call('HGET', hashKey, 'r:' .. member)
    if amount then total = dsub(total, amount) end
    redis.call('HDEL', hashKey, 'r:' .. member)
    redis.call('ZREM', zsetKey, member)
  end
  redis.call('HSET', hashKey, 'total', total)
end
`;

/**
 * KEYS: rate, balance, sending gas, receiving gas, reservations hash, reservations expiry zset.
 * ARGV: nowMs, maxAgeMs, amount, member, untilMs, rateLimitMs, minGasSending, minGasReceiving, commit (1/0).
 * Returns {code, balance, reservedBefore}: code 'ok' or a refusal code.
 */
const RESERVE_LUA = `${DIGIT_MATH_LUA}${PRUNE_LUA}
local nowMs = tonumber(ARGV[1])
local maxAgeMs = tonumber(ARGV[2])
local amount = ARGV[3]
local member = ARGV[4]
local rateLimitMs = tonumber(ARGV[6])
local commit = ARGV[9] == '1'
if rateLimitMs > 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  return {'AuctionRateExceeded', '', ''}
end
local function fresh(key)
  local v = redis.call('HMGET', key, 'amount', 'updatedAtMs')
  if not v[1] or not v[2] or not dvalid(v[1]) then return nil, 'missing' end
  if nowMs - tonumber(v[2]) > maxAgeMs then return nil, 'stale' end
  return dnorm(v[1]), nil
end
local balance, why = fresh(KEYS[2])
if not balance then return {'StaleBalance', 'balance-' .. why, ''} end
local gasSending, whyS = fresh(KEYS[3])
if not gasSending then return {'StaleBalance', 'sending-gas-' .. whyS, ''} end
local gasReceiving, whyR = fresh(KEYS[4])
if not gasReceiving then return {'StaleBalance', 'receiving-gas-' .. whyR, ''} end
prune(KEYS[5], KEYS[6], nowMs)
local reserved = redis.call('HGET', KEYS[5], 'total') or '0'
local previous = redis.call('HGET', KEYS[5], 'r:' .. member)
if previous then reserved = dsub(reserved, previous) end
if dcmp(balance, amount) < 0 then
  return {'NotEnoughLiquidity', balance, reserved}
end
if dcmp(dadd(reserved, amount), balance) > 0 then
  return {'LiquidityUnavailable', balance, reserved}
end
if dcmp(gasSending, ARGV[7]) < 0 or dcmp(gasReceiving, ARGV[8]) < 0 then
  return {'NotEnoughGas', gasSending, gasReceiving}
end
if commit then
  redis.call('HSET', KEYS[5], 'total', dadd(reserved, amount), 'r:' .. member, amount)
  redis.call('ZADD', KEYS[6], ARGV[5], member)
  if rateLimitMs > 0 then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', rateLimitMs)
  end
end
return {'ok', balance, reserved}
`;

/** KEYS: hash, zset. ARGV: member, untilMs. Extends (never shortens) an existing reservation. */
const PIN_LUA = `
if redis.call('HEXISTS', KEYS[1], 'r:' .. ARGV[1]) == 0 then return 0 end
local current = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[2]) > current then redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1]) end
return 1
`;

/** KEYS: hash, zset. ARGV: member. */
const RELEASE_LUA = `${DIGIT_MATH_LUA}
local amount = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if not amount then return 0 end
local total = redis.call('HGET', KEYS[1], 'total') or '0'
redis.call('HSET', KEYS[1], 'total', dsub(total, amount))
redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`;

export type ReserveCode =
  "ok" | "AuctionRateExceeded" | "StaleBalance" | "NotEnoughLiquidity" | "LiquidityUnavailable" | "NotEnoughGas";

export interface ReserveParams {
  readonly user: string;
  readonly sendingChainId: number;
  readonly sendingAssetId: string;
  readonly receivingChainId: number;
  readonly receivingAssetId: string;
  /** `transferKey(transactionId, user)`. */
  readonly transferKey: string;
  /** What the bid promises on the receiving chain. */
  readonly amount: bigint;
  readonly nowMs: number;
  /** When the reservation lapses unless pinned. */
  readonly untilMs: number;
  /** Balances and gas balances older than this count as stale. */
  readonly maxAgeMs: number;
  /** `requestLimit`; 0 disables the rate limit. */
  readonly rateLimitMs: number;
  readonly minGasSending: bigint;
  readonly minGasReceiving: bigint;
  /** false (dry run): every check, but neither reservation nor rate-limit stamp. */
  readonly commit: boolean;
}

export interface ReserveOutcome {
  readonly code: ReserveCode;
  /** Detail for the log: balances as decimal strings, or which value was missing or stale. */
  readonly detail: string;
}

export interface BidReservations {
  reserve(params: ReserveParams): Promise<ReserveOutcome>;
  /** Extends a reservation to `untilMs`; false when there is none (never bid, released or lapsed). */
  pin(chainId: number, assetId: string, transferKey: string, untilMs: number): Promise<boolean>;
  /** Removes a reservation; false when there was none. */
  release(chainId: number, assetId: string, transferKey: string): Promise<boolean>;
  /** The promised total (lapsed reservations count until a reserve prunes them). */
  reservedTotal(chainId: number, assetId: string): Promise<bigint>;
}

export function createBidReservations(redis: Redis, prefix: string): BidReservations {
  const reserveScript = scriptRunner(redis, RESERVE_LUA);
  const pinScript = scriptRunner(redis, PIN_LUA);
  const releaseScript = scriptRunner(redis, RELEASE_LUA);
  const keysOf = (chainId: number, assetId: string): string[] => [
    bidReservationsKey(prefix, chainId, assetId),
    bidReservationExpiryKey(prefix, chainId, assetId),
  ];
  return {
    reserve: async (p) => {
      const keys = [
        auctionRateKey(prefix, p),
        routerBalanceKey(prefix, p.receivingChainId, p.receivingAssetId),
        gasBalanceKey(prefix, p.sendingChainId),
        gasBalanceKey(prefix, p.receivingChainId),
        ...keysOf(p.receivingChainId, p.receivingAssetId),
      ];
      const args = [
        String(p.nowMs),
        String(p.maxAgeMs),
        p.amount.toString(),
        p.transferKey.toLowerCase(),
        String(p.untilMs),
        String(p.rateLimitMs),
        p.minGasSending.toString(),
        p.minGasReceiving.toString(),
        p.commit ? "1" : "0",
      ];
      const [code, a, b] = (await reserveScript(keys, args)) as [ReserveCode, string, string];
      return { code, detail: describe(code, a, b) };
    },
    pin: async (chainId, assetId, transferKey, untilMs) =>
      (await pinScript(keysOf(chainId, assetId), [transferKey.toLowerCase(), String(untilMs)])) === 1,
    release: async (chainId, assetId, transferKey) =>
      (await releaseScript(keysOf(chainId, assetId), [transferKey.toLowerCase()])) === 1,
    reservedTotal: async (chainId, assetId) =>
      BigInt((await redis.hget(bidReservationsKey(prefix, chainId, assetId), "total")) ?? "0"),
  };
}

function describe(code: ReserveCode, a: string, b: string): string {
  switch (code) {
    case "StaleBalance":
      return `${a}: no recent value in Redis (is the chain's poller running?)`;
    case "NotEnoughLiquidity":
    case "LiquidityUnavailable":
    case "ok":
      return `balance ${a}, reserved by open bids ${b}`;
    case "NotEnoughGas":
      return `signer gas: sending chain ${a}, receiving chain ${b}`;
    default:
      return "";
  }
}

/** EVALSHA with a fallback to EVAL when the server does not know the script yet (restart, SCRIPT FLUSH). */
export function scriptRunner(
  redis: Redis,
  lua: string,
): (keys: readonly string[], args: readonly string[]) => Promise<unknown> {
  const sha = createHash("sha1").update(lua).digest("hex");
  return async (keys, args) => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith("NOSCRIPT")) {
        return redis.eval(lua, keys.length, ...keys, ...args);
      }
      throw err;
    }
  };
}

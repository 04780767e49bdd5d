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
 * liquidity twice (docs/protocol.md#deviation-reservations; the policy is docs/auction.md, "Promises"):
 * - every signed bid keeps its `amountReceived` promised on the receiving (chain, asset) until its own
 *   `bidExpiry` (plus a grace, see the auction); a transfer's promise is its largest such bid, so a
 *   re-request never lowers it;
 * - once the sending-side prepare is seen the poller turns the promise into a hard hold of the bid used,
 *   released once the receiving prepare is stored and the balance read after it reflects the lock;
 * - unprepared promises block new bids only up to `UNPREPARED_SHARE_PERCENT` of the free liquidity, so
 *   requesters that never prepare cannot lock the rest;
 * - the `requestLimit` stamp per (user, chains, assets).
 * One Lua script checks rate limit, freshness, liquidity and gas and records the bid and the stamp in
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
  if b == '0' then return a end
  if a == '0' then return b end
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
  if b == '0' then return a end
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
-- floor(a / d) for a small integer d (at most 64: the remainder times BASE stays exact in a double).
local function ddiv(a, d)
  local x = dchunks(a)
  local parts, rem = {}, 0
  for k = #x, 1, -1 do
    local cur = rem * BASE + x[k]
    parts[k] = math.floor(cur / d)
    rem = cur - parts[k] * d
  end
  return djoin(parts)
end
local function dvalid(a)
  return type(a) == 'string' and string.find(a, '^[0-9]+$') ~= nil
end
`;

/**
 * The share of the free liquidity (balance minus hard holds) that unprepared promises can block: 1/2, 50 %
 * (docs/auction.md, "Promises"). Promises of unprepared bids count against a new bid only up to this share, so
 * requests up to the rest are never refused for liquidity, whatever requesters that never prepare do; it is
 * also the per-requester cap on several open transfers of one `user`. A divisor: the script halves exactly.
 */
const UNPREPARED_SHARE_DIVISOR = 2;
export const UNPREPARED_SHARE_PERCENT = 100 / UNPREPARED_SHARE_DIVISOR;

/**
 * Open bids one transfer may hold at once (its re-requests within bidExpiry + grace). Each keeps its own
 * promise, so the list is bounded; an honest requester re-asks a handful of times at most.
 */
export const MAX_BIDS_PER_TRANSFER = 16;

/**
 * The promise records of one receiving (chain, asset), shared by the scripts below. In the hash:
 * - `total`: every promise; `hard`: the hard holds (sending prepare seen); unprepared = total − hard;
 * - `r:<transferKey>`: the transfer's promise: the largest unexpired bid, or the hard hold;
 * - `s:<transferKey>`: `hard`, or the transfer's unexpired bids as `amount@untilMs,...` (largest first, each
 *   kept until its own untilMs; a bid covered by another as large and as long is merged away);
 * - `u:<user>`: the user's unprepared promises (the per-requester cap).
 * The zset scores each transfer by when its promise next changes (its earliest bid lapses, or the hold ends).
 * A record written before `s:` existed counts as one unprepared bid until its zset score.
 */
const PROMISES_LUA = `
local function fadd(h, f, v)
  redis.call('HSET', h, f, dadd(redis.call('HGET', h, f) or '0', v))
end
local function fsub(h, f, v)
  local left = dsub(redis.call('HGET', h, f) or '0', v)
  if left == '0' and string.sub(f, 1, 2) == 'u:' then redis.call('HDEL', h, f) else redis.call('HSET', h, f, left) end
end
local function userOf(member)
  return string.match(member, '%-([^%-]+)$') or member
end
local function parseBids(h, z, member)
  local state = redis.call('HGET', h, 's:' .. member)
  local out = {}
  if state then
    for amount, untilMs in string.gmatch(state, '(%d+)@(%d+)') do out[#out + 1] = {amount, tonumber(untilMs)} end
  else
    local legacy = redis.call('HGET', h, 'r:' .. member)
    if legacy then out[1] = {legacy, tonumber(redis.call('ZSCORE', z, member) or '0')} end
  end
  return out
end
-- Removes the transfer's promise, unprepared or hard. Returns true when there was one.
local function drop(h, z, member)
  local amount = redis.call('HGET', h, 'r:' .. member)
  if amount then
    fsub(h, 'total', amount)
    if redis.call('HGET', h, 's:' .. member) == 'hard' then fsub(h, 'hard', amount) else fsub(h, 'u:' .. userOf(member), amount) end
  end
  redis.call('HDEL', h, 'r:' .. member, 's:' .. member)
  redis.call('ZREM', z, member)
  return amount ~= false and amount ~= nil
end
-- Sets the transfer's unprepared bids (non-empty): its promise is the largest, until the earliest lapses.
local function setBids(h, z, member, bids)
  table.sort(bids, function(x, y) return dcmp(x[1], y[1]) > 0 end)
  local parts, earliest = {}, nil
  for k, b in ipairs(bids) do
    parts[k] = b[1] .. '@' .. string.format('%.0f', b[2])
    if earliest == nil or b[2] < earliest then earliest = b[2] end
  end
  local promise = bids[1][1]
  local old = redis.call('HGET', h, 'r:' .. member) or '0'
  if old ~= promise then
    local user = 'u:' .. userOf(member)
    local totals = redis.call('HMGET', h, 'total', user)
    redis.call('HSET', h, 'total', dadd(dsub(totals[1] or '0', old), promise),
      user, dadd(dsub(totals[2] or '0', old), promise))
  end
  redis.call('HSET', h, 'r:' .. member, promise, 's:' .. member, table.concat(parts, ','))
  redis.call('ZADD', z, earliest, member)
end
-- Drops lapsed bids and holds (bounded per call; what is left over counts until a later call).
local function prune(h, z, nowMs)
  local lapsed = redis.call('ZRANGEBYSCORE', z, '-inf', nowMs, 'LIMIT', 0, 1000)
  for _, member in ipairs(lapsed) do
    local live = {}
    if redis.call('HGET', h, 's:' .. member) ~= 'hard' then
      for _, b in ipairs(parseBids(h, z, member)) do
        if b[2] > nowMs then live[#live + 1] = b end
      end
    end
    if #live > 0 then setBids(h, z, member, live) else drop(h, z, member) end
  end
end
-- The live bids no other live bid covers (as large and as long): amounts falling as untilMs rises. Only
-- bids already answered are merged this way: the newest may still be withdrawn, so it is appended after.
local function staircase(bids, nowMs)
  table.sort(bids, function(x, y)
    local c = dcmp(x[1], y[1])
    if c ~= 0 then return c > 0 end
    return x[2] > y[2]
  end)
  local out, latest = {}, nil
  for _, b in ipairs(bids) do
    if b[2] > nowMs and (latest == nil or b[2] > latest) then
      out[#out + 1] = b
      latest = b[2]
    end
  end
  return out
end
local function dmin(a, b)
  if dcmp(a, b) <= 0 then return a end
  return b
end
`;

/**
 * KEYS: rate, balance, sending gas, receiving gas, promises hash, promises zset[, request claim].
 * ARGV: nowMs, maxAgeMs, amount, member, untilMs, rateLimitMs, minGasSending, minGasReceiving, commit (1/0),
 * shareDivisor, maxBids (per transfer)[, claim token, bidExpiry, gasFee, leaseMs, keepMs].
 * Returns {code, a, b, c, why}: for liquidity codes and ok, a = balance, b = hard holds, c = the unprepared
 * promises of other transfers; why names the rule ('' for the liquidity rule itself).
 * With a request claim (services/auction/request-claims.ts) the step is fenced: when the claim exists and is not
 * `c` under this token (another instance took the request over, or it is done) the result is ClaimLost; on ok
 * the claim becomes `r` with the bid's fields (created here when the owner had not claimed yet: the normal path,
 * one round trip), so a taker after this owner's death re-sends this bid instead of a new one.
 */
const RESERVE_LUA = `${DIGIT_MATH_LUA}${PROMISES_LUA}
local nowMs = tonumber(ARGV[1])
local maxAgeMs = tonumber(ARGV[2])
local amount = ARGV[3]
local member = ARGV[4]
local untilMs = tonumber(ARGV[5])
local rateLimitMs = tonumber(ARGV[6])
local commit = ARGV[9] == '1'
local shareDivisor = tonumber(ARGV[10])
local maxBids = tonumber(ARGV[11])
local claimKey, claimed = KEYS[7], nil
if claimKey then
  claimed = redis.call('GET', claimKey)
  if claimed and string.match(claimed, '^c|([^|]*)|') ~= ARGV[12] then
    return {'ClaimLost', '', '', '', ''}
  end
end
if rateLimitMs > 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  return {'AuctionRateExceeded', '', '', '', ''}
end
local function fresh(key)
  local v = redis.call('HMGET', key, 'amount', 'updatedAtMs')
  if not v[1] or not v[2] or not dvalid(v[1]) then return nil, 'missing' end
  if nowMs - tonumber(v[2]) > maxAgeMs then return nil, 'stale' end
  return dnorm(v[1]), nil
end
local balance, why = fresh(KEYS[2])
if not balance then return {'StaleBalance', 'balance-' .. why, '', '', ''} end
local gasSending, whyS = fresh(KEYS[3])
if not gasSending then return {'StaleBalance', 'sending-gas-' .. whyS, '', '', ''} end
local gasReceiving, whyR = fresh(KEYS[4])
if not gasReceiving then return {'StaleBalance', 'receiving-gas-' .. whyR, '', '', ''} end
local h, z = KEYS[5], KEYS[6]
prune(h, z, nowMs)
local total = redis.call('HGET', h, 'total') or '0'
local hard = redis.call('HGET', h, 'hard') or '0'
local prepared = redis.call('HGET', h, 's:' .. member) == 'hard'
-- This transfer's own unprepared promise never counts against its re-request (one prepare per transfer).
local own = '0'
if not prepared then own = redis.call('HGET', h, 'r:' .. member) or '0' end
local others = dsub(dsub(total, hard), own)
if dcmp(balance, amount) < 0 then
  return {'NotEnoughLiquidity', balance, hard, others, ''}
end
if prepared then
  return {'LiquidityUnavailable', balance, hard, others, 'transfer-prepared'}
end
local free = dsub(balance, hard)
local share = ddiv(free, shareDivisor)
if dcmp(dadd(dmin(others, share), amount), free) > 0 then
  return {'LiquidityUnavailable', balance, hard, others, ''}
end
local userOthers = dsub(redis.call('HGET', h, 'u:' .. userOf(member)) or '0', own)
if userOthers ~= '0' and dcmp(dadd(userOthers, amount), share) > 0 then
  return {'LiquidityUnavailable', balance, hard, others, 'requester-cap'}
end
if dcmp(gasSending, ARGV[7]) < 0 or dcmp(gasReceiving, ARGV[8]) < 0 then
  return {'NotEnoughGas', gasSending, gasReceiving, '', ''}
end
if commit then
  local bids = staircase(parseBids(h, z, member), nowMs)
  if #bids >= maxBids then
    return {'AuctionRateExceeded', '', '', '', 'transfer-bids'}
  end
  bids[#bids + 1] = {amount, untilMs}
  setBids(h, z, member, bids)
  if rateLimitMs > 0 then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', rateLimitMs)
  end
end
if claimKey then
  local t = redis.call('TIME')
  local leaseUntil = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[15]))
  local value = 'r|' .. ARGV[12] .. '|' .. leaseUntil .. '|' .. amount .. '|' .. ARGV[13] .. '|' .. ARGV[14]
  if claimed then
    redis.call('SET', claimKey, value, 'KEEPTTL')
  else
    redis.call('SET', claimKey, value, 'PX', ARGV[16])
  end
end
return {'ok', balance, hard, others, ''}
`;

/**
 * KEYS: hash, zset. ARGV: member, untilMs, amountUsed ('' when unknown).
 * The sending prepare is in: the transfer's promise becomes a hard hold of the bid it used (never more than
 * was promised), until untilMs; an existing hold is only extended. 0 when there is no promise.
 */
const PIN_LUA = `${DIGIT_MATH_LUA}${PROMISES_LUA}
local h, z, member = KEYS[1], KEYS[2], ARGV[1]
local promise = redis.call('HGET', h, 'r:' .. member)
if not promise then return 0 end
local untilMs = tonumber(ARGV[2])
if redis.call('HGET', h, 's:' .. member) ~= 'hard' then
  local held = promise
  if ARGV[3] ~= '' and dcmp(ARGV[3], promise) < 0 then held = ARGV[3] end
  drop(h, z, member)
  fadd(h, 'total', held)
  fadd(h, 'hard', held)
  redis.call('HSET', h, 'r:' .. member, held, 's:' .. member, 'hard')
  redis.call('ZADD', z, untilMs, member)
  return 1
end
local current = tonumber(redis.call('ZSCORE', z, member) or '0')
if untilMs > current then redis.call('ZADD', z, untilMs, member) end
return 1
`;

/** KEYS: hash, zset. ARGV: member. */
const RELEASE_LUA = `${DIGIT_MATH_LUA}${PROMISES_LUA}
if drop(KEYS[1], KEYS[2], ARGV[1]) then return 1 end
return 0
`;

/** KEYS: hash, zset. ARGV: member, amount, untilMs. Withdraws one unsigned bid, leaving the transfer's others. */
const WITHDRAW_LUA = `${DIGIT_MATH_LUA}${PROMISES_LUA}
local h, z, member = KEYS[1], KEYS[2], ARGV[1]
if redis.call('HGET', h, 's:' .. member) == 'hard' then return 0 end
local left, found = {}, false
for _, b in ipairs(parseBids(h, z, member)) do
  if not found and b[1] == ARGV[2] and b[2] == tonumber(ARGV[3]) then found = true else left[#left + 1] = b end
end
if not found then return 0 end
if #left > 0 then setBids(h, z, member, left) else drop(h, z, member) end
return 1
`;

export type ReserveCode =
  | "ok"
  | "AuctionRateExceeded"
  | "StaleBalance"
  | "NotEnoughLiquidity"
  | "LiquidityUnavailable"
  | "NotEnoughGas"
  | "ClaimLost";

/** The auction request's claim this step is fenced on (services/auction/request-claims.ts). */
export interface ReserveClaim {
  readonly key: string;
  readonly token: string;
  /** Stored with the claim on ok, so a taker re-sends this very bid. */
  readonly bidExpiry: number;
  readonly gasFee: string;
  /** The claim's lease from this step on (state `r`), and how long the key stays when this step creates it. */
  readonly leaseMs: number;
  readonly keepMs: number;
}

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
  /** Fences the step on the request's claim (several auction instances receive every request). */
  readonly claim?: ReserveClaim;
}

export interface ReserveOutcome {
  readonly code: ReserveCode;
  /** Detail for the log: balances as decimal strings, or which value was missing or stale. */
  readonly detail: string;
}

/** What is promised on one receiving (chain, asset), as decimal amounts. */
export interface Promises {
  /** Every promise: hard holds plus unprepared bids (lapsed ones count until a reserve prunes them). */
  readonly total: bigint;
  /** Transfers whose sending prepare the poller has seen, until their receiving prepare shows in the balance. */
  readonly hard: bigint;
  /** Per transfer, its largest unexpired signed bid. */
  readonly byTransfer: ReadonlyMap<string, bigint>;
}

export interface BidReservations {
  reserve(params: ReserveParams): Promise<ReserveOutcome>;
  /**
   * The transfer's sending prepare is in: its promise becomes a hard hold of `amountUsed` (the receiving amount
   * of the bid the prepare carries; never more than was promised, the whole promise when undefined) until
   * `untilMs`, or an existing hold is extended. False when there is none (never bid, released or lapsed).
   */
  pin(chainId: number, assetId: string, transferKey: string, untilMs: number, amountUsed?: bigint): Promise<boolean>;
  /** Removes a transfer's promise, every bid of it or its hold; false when there was none. */
  release(chainId: number, assetId: string, transferKey: string): Promise<boolean>;
  /** Takes back the one bid `reserve` just recorded (it was never sent); the transfer's other bids stay. */
  withdraw(
    p: Pick<ReserveParams, "receivingChainId" | "receivingAssetId" | "transferKey" | "amount" | "untilMs">,
  ): Promise<boolean>;
  /** The promised total (lapsed reservations count until a reserve prunes them). */
  reservedTotal(chainId: number, assetId: string): Promise<bigint>;
  promises(chainId: number, assetId: string): Promise<Promises>;
}

export function createBidReservations(redis: Redis, prefix: string): BidReservations {
  const reserveScript = scriptRunner(redis, RESERVE_LUA);
  const pinScript = scriptRunner(redis, PIN_LUA);
  const releaseScript = scriptRunner(redis, RELEASE_LUA);
  const withdrawScript = scriptRunner(redis, WITHDRAW_LUA);
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
        ...(p.claim ? [p.claim.key] : []),
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
        String(UNPREPARED_SHARE_DIVISOR),
        String(MAX_BIDS_PER_TRANSFER),
        ...(p.claim
          ? [p.claim.token, String(p.claim.bidExpiry), p.claim.gasFee, String(p.claim.leaseMs), String(p.claim.keepMs)]
          : []),
      ];
      const [code, a, b, c, why] = (await reserveScript(keys, args)) as [ReserveCode, string, string, string, string];
      return { code, detail: describe(code, [a, b, c], why) };
    },
    pin: async (chainId, assetId, transferKey, untilMs, amountUsed) =>
      (await pinScript(keysOf(chainId, assetId), [
        transferKey.toLowerCase(),
        String(untilMs),
        amountUsed === undefined ? "" : amountUsed.toString(),
      ])) === 1,
    release: async (chainId, assetId, transferKey) =>
      (await releaseScript(keysOf(chainId, assetId), [transferKey.toLowerCase()])) === 1,
    withdraw: async (p) =>
      (await withdrawScript(keysOf(p.receivingChainId, p.receivingAssetId), [
        p.transferKey.toLowerCase(),
        p.amount.toString(),
        String(p.untilMs),
      ])) === 1,
    reservedTotal: async (chainId, assetId) =>
      BigInt((await redis.hget(bidReservationsKey(prefix, chainId, assetId), "total")) ?? "0"),
    promises: async (chainId, assetId) => {
      const fields = await redis.hgetall(bidReservationsKey(prefix, chainId, assetId));
      const byTransfer = new Map<string, bigint>();
      for (const [field, value] of Object.entries(fields)) {
        if (field.startsWith("r:")) byTransfer.set(field.slice(2), BigInt(value));
      }
      return { total: BigInt(fields.total ?? "0"), hard: BigInt(fields.hard ?? "0"), byTransfer };
    },
  };
}

function describe(code: ReserveCode, [a, b, c]: readonly string[], why: string): string {
  switch (code) {
    case "StaleBalance":
      return `${a}: no recent value in Redis (is the chain's poller running?)`;
    case "NotEnoughLiquidity":
    case "LiquidityUnavailable":
    case "ok": {
      const rule =
        why === "requester-cap"
          ? `; the requester's other open bids and this one exceed ${UNPREPARED_SHARE_PERCENT} % of the free liquidity`
          : why === "transfer-prepared"
            ? "; the transfer's sending side is already prepared with another bid"
            : "";
      return `balance ${a}, hard holds ${b}, unprepared bids of other transfers ${c}${rule}`;
    }
    case "AuctionRateExceeded":
      return why === "transfer-bids"
        ? `the transfer already holds ${MAX_BIDS_PER_TRANSFER} open bids`
        : "a bid for the same user, chains and assets was signed less than requestLimit ago";
    case "NotEnoughGas":
      return `signer gas: sending chain ${a}, receiving chain ${b}`;
    case "ClaimLost":
      return "another auction instance took this request over (this one missed its claim's lease)";
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

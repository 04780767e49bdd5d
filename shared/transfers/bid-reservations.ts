import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import {
  auctionRateKey,
  bidReservationExpiryKey,
  bidReservationLapseKey,
  bidReservationsKey,
  cleanUpModeKey,
  gasBalanceKey,
  routerBalanceKey,
} from "../queues";

/**
 * The auction's shared bookkeeping in Redis, so any number of auction instances never promise the same
 * liquidity twice (docs/protocol.md#deviation-reservations; the policy is docs/auction.md, "Promises"):
 * - every signed bid keeps its `amountReceived` promised on the receiving (chain, asset) until its own
 *   `bidExpiry` (plus a grace, see the auction); a transfer's promise is its largest such bid, so a
 *   re-request never lowers it;
 * - once a sending-side prepare that passes the receiving prepare's verification is seen, the poller turns the
 *   promise into a hard hold of what that prepare locked for, released once the receiving prepare is stored and
 *   the balance read after it reflects the lock, or as soon as the transfer will not be honoured;
 * - unprepared promises block new bids only up to `UNPREPARED_SHARE_PERCENT` of the free liquidity, so
 *   requesters that never prepare cannot lock the rest;
 * - a promise stops counting at its lapse time, however many lapsed with it (sums per lapse time);
 * - the `requestLimit` stamp per transfer.
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
-- acc (chunks, least significant first) += a, kept normalised so every chunk stays exact in a double.
local function dsumInto(acc, a)
  local x = dchunks(a)
  local n = math.max(#acc, #x)
  local carry = 0
  for k = 1, n do
    local s = (acc[k] or 0) + (x[k] or 0) + carry
    if s >= BASE then carry = 1; s = s - BASE else carry = 0 end
    acc[k] = s
  end
  if carry > 0 then acc[n + 1] = carry end
end
local function dadd(a, b)
  if b == '0' then return a end
  if a == '0' then return b end
  local acc = dchunks(a)
  dsumInto(acc, b)
  return djoin(acc)
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
 * requests up to the rest are never refused for liquidity, whatever other requesters do. A divisor: the script
 * halves exactly.
 */
const UNPREPARED_SHARE_DIVISOR = 2;
export const UNPREPARED_SHARE_PERCENT = 100 / UNPREPARED_SHARE_DIVISOR;

/**
 * Open bids one transfer may hold at once (its re-requests within bidExpiry + grace). Each keeps its own
 * promise, so the list is bounded; an honest requester re-asks a handful of times at most.
 */
export const MAX_BIDS_PER_TRANSFER = 16;

/**
 * Records of transfers with nothing left to count that one script call forgets (memory only: a lapsed promise
 * stops counting through its lapse-time sum, whatever is left of its record). Each reserve adds at most one, so
 * a few per call keep up.
 */
const FORGET_PER_CALL = 4;

/**
 * The step lapse times are rounded up to: a promise lasts until its `untilMs` rounded up to the next 10 s. The
 * sums are kept per step, so at most one per 10 s of the longest promise (the 1 h hold) is ever open: ≈ 400, which
 * bounds what one prune subtracts whatever the number of promises (bench/reservation-scripts.ts).
 */
export const LAPSE_STEP_MS = 10_000;

/** When a promise recorded with `untilMs` stops counting. */
export function promiseLapseMs(untilMs: number): number {
  return Math.ceil(untilMs / LAPSE_STEP_MS) * LAPSE_STEP_MS;
}

/**
 * The promise records of one receiving (chain, asset), shared by the scripts below. Every lapse time is rounded
 * up to `LAPSE_STEP_MS`. In the hash:
 * - `total`: every promise not lapsed by `wm`; `hard`: the hard holds among them; unprepared = total − hard;
 * - `wm`: the time of the last prune (ms, never moves back): a bid or hold lapsing at or before it is gone;
 * - `b:<ms>`: what stops counting at that time (`k:<ms>`: its hard part). A transfer whose bids are a staircase
 *   (amounts falling as lapse times rise: its promise is the largest live one) adds each step's drop to the sum
 *   of that step's time, so at any time the live sums add up to exactly the largest live bid of each transfer;
 * - `p:<transferKey>`: the transfer's bids as `amount@untilMs,...`, or its hard hold as `h:amount@untilMs`.
 * Zsets: the lapse times with a sum (KEYS[3] of each script), and the transfers by their last lapse time (KEYS[2]).
 * A prune subtracts every sum whose time has come: at most one per step of the longest promise, never a number
 * that grows with the promises open or lapsed.
 * Fields of earlier versions (`r:`, `s:`, `u:`, a `total` without `wm`) are not counted: an upgrade forgets the
 * open promises (the receiving prepare still checks the liquidity on chain).
 */
const PROMISES_LUA = `
local function fadd(h, f, v)
  if v == '0' then return end
  redis.call('HSET', h, f, dadd(redis.call('HGET', h, f) or '0', v))
end
local function fsub(h, f, v)
  if v == '0' then return end
  redis.call('HSET', h, f, dsub(redis.call('HGET', h, f) or '0', v))
end
local function fmt(ms) return string.format('%.0f', ms) end
local function roundUp(ms) return math.ceil(ms / ${LAPSE_STEP_MS}) * ${LAPSE_STEP_MS} end
-- The transfer's record: nil when none, else whether it is a hard hold, and its entries {amount, untilMs}.
local function readRecord(h, member)
  local state = redis.call('HGET', h, 'p:' .. member)
  if not state then return nil, {} end
  local out = {}
  for amount, untilMs in string.gmatch(state, '(%d+)@(%d+)') do out[#out + 1] = {amount, tonumber(untilMs)} end
  return string.sub(state, 1, 2) == 'h:', out
end
-- The live bids no other live bid covers (as large and as long): amounts falling as untilMs rises.
local function staircase(bids, wm)
  table.sort(bids, function(x, y)
    local c = dcmp(x[1], y[1])
    if c ~= 0 then return c > 0 end
    return x[2] > y[2]
  end)
  local out, latest = {}, nil
  for _, b in ipairs(bids) do
    if b[2] > wm and (latest == nil or b[2] > latest) then
      out[#out + 1] = b
      latest = b[2]
    end
  end
  return out
end
-- The record's promise now: its largest live entry ('0' when none).
local function livePromise(entries, wm)
  local best = '0'
  for _, b in ipairs(entries) do
    if b[2] > wm and dcmp(b[1], best) > 0 then best = b[1] end
  end
  return best
end
-- Adds (sign 1) or removes (sign -1) the record's live entries to or from the lapse-time sums and the totals.
local function account(h, lz, hard, entries, wm, sign)
  local steps = {}
  if hard then
    if entries[1] and entries[1][2] > wm then steps[1] = {entries[1][1], entries[1][2]} end
  else
    local st = staircase(entries, wm)
    for k, b in ipairs(st) do steps[k] = {dsub(b[1], st[k + 1] and st[k + 1][1] or '0'), b[2]} end
  end
  local change = sign > 0 and fadd or fsub
  for _, step in ipairs(steps) do
    local at = fmt(step[2])
    change(h, 'b:' .. at, step[1])
    change(h, 'total', step[1])
    if hard then
      change(h, 'k:' .. at, step[1])
      change(h, 'hard', step[1])
    end
    if sign > 0 then redis.call('ZADD', lz, step[2], at) end
  end
end
-- Replaces the transfer's record (its old live entries leave the sums, the new ones enter them).
local function writeRecord(h, tz, lz, member, hard, entries, wm)
  local oldHard, old = readRecord(h, member)
  if oldHard ~= nil then account(h, lz, oldHard, old, wm, -1) end
  redis.call('HDEL', h, 'r:' .. member, 's:' .. member)
  local parts, last = {}, nil
  for _, b in ipairs(entries) do
    if b[2] > wm then
      parts[#parts + 1] = b[1] .. '@' .. fmt(b[2])
      if last == nil or b[2] > last then last = b[2] end
    end
  end
  if last == nil then
    redis.call('HDEL', h, 'p:' .. member)
    redis.call('ZREM', tz, member)
    return
  end
  local state = table.concat(parts, ',')
  if hard then state = 'h:' .. state end
  redis.call('HSET', h, 'p:' .. member, state)
  redis.call('ZADD', tz, last, member)
  account(h, lz, hard, entries, wm, 1)
end
-- Removes the transfer's promise, unprepared or hard. Returns true when it was live.
local function drop(h, tz, lz, member, wm)
  local hard, entries = readRecord(h, member)
  local live = hard ~= nil and livePromise(entries, wm) ~= '0'
  writeRecord(h, tz, lz, member, false, {}, wm)
  return live
end
-- Every sum whose time has come stops counting; a few records with nothing live left are forgotten. Returns wm.
local function prune(h, tz, lz, nowMs)
  local stored = redis.call('HGET', h, 'wm')
  if not stored then redis.call('HDEL', h, 'total', 'hard') end
  local wm = tonumber(stored or '0')
  if nowMs > wm then wm = nowMs end
  local due = redis.call('ZRANGEBYSCORE', lz, '-inf', wm)
  if #due > 0 then
    local fields = {}
    for _, at in ipairs(due) do
      fields[#fields + 1] = 'b:' .. at
      fields[#fields + 1] = 'k:' .. at
    end
    -- The lapsed sums are added up in chunks and subtracted once (one digit-string operation per sum, not three).
    local lapsed, lapsedHard = {}, {}
    for i = 1, #fields, 1000 do
      local part = {unpack(fields, i, math.min(i + 999, #fields))}
      local values = redis.call('HMGET', h, unpack(part))
      for j = 1, #part, 2 do
        if values[j] then dsumInto(lapsed, values[j]) end
        if values[j + 1] then dsumInto(lapsedHard, values[j + 1]) end
      end
      redis.call('HDEL', h, unpack(part))
    end
    local total = dsub(redis.call('HGET', h, 'total') or '0', djoin(lapsed))
    local hard = dsub(redis.call('HGET', h, 'hard') or '0', djoin(lapsedHard))
    redis.call('HSET', h, 'total', total, 'hard', hard)
    redis.call('ZREMRANGEBYSCORE', lz, '-inf', wm)
  end
  redis.call('HSET', h, 'wm', fmt(wm))
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', tz, '-inf', wm, 'LIMIT', 0, ${FORGET_PER_CALL})) do
    redis.call('HDEL', h, 'p:' .. member, 'r:' .. member, 's:' .. member)
    redis.call('ZREM', tz, member)
  end
  return wm
end
local function dmin(a, b)
  if dcmp(a, b) <= 0 then return a end
  return b
end
`;

/**
 * KEYS: rate, balance, sending gas, receiving gas, promises hash, transfers zset, lapse-times zset, clean-up switch
 * (cleanUpModeKey)[, request claim].
 * ARGV: nowMs, maxAgeMs, amount, member, untilMs, rateLimitMs, minGasSending, minGasReceiving, commit (1/0),
 * shareDivisor, maxBids (per transfer), keep ('' = no inventory rule)[, claim token, bidExpiry, gasFee, leaseMs,
 * keepMs].
 * Returns {code, a, b, c, why}: for liquidity codes and ok, a = balance, b = hard holds, c = the unprepared
 * promises of other transfers; why names the rule ('' for the liquidity rule itself). While the clean-up switch
 * exists (`npm run drain`) every request is RouterInCleanUpMode: checked in this step, so no bid is reserved (and
 * signed) once the switch's SET has returned.
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
local untilMs = roundUp(tonumber(ARGV[5]))
local rateLimitMs = tonumber(ARGV[6])
local commit = ARGV[9] == '1'
local shareDivisor = tonumber(ARGV[10])
local maxBids = tonumber(ARGV[11])
if redis.call('EXISTS', KEYS[8]) == 1 then
  return {'RouterInCleanUpMode', '', '', '', ''}
end
local claimKey, claimed = KEYS[9], nil
if claimKey then
  claimed = redis.call('GET', claimKey)
  if claimed and string.match(claimed, '^c|([^|]*)|') ~= ARGV[13] then
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
local h, tz, lz = KEYS[5], KEYS[6], KEYS[7]
local wm = prune(h, tz, lz, nowMs)
local total = redis.call('HGET', h, 'total') or '0'
local hard = redis.call('HGET', h, 'hard') or '0'
local ownHard, ownEntries = readRecord(h, member)
local prepared = ownHard == true and livePromise(ownEntries, wm) ~= '0'
-- This transfer's own unprepared promise never counts against its re-request (one prepare per transfer).
local own = '0'
if not prepared then own = livePromise(ownEntries, wm) end
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
-- The inventory rule (docs/auction.md, "Inventory decline"): what the receiving chain keeps after this bid
-- (balance − hard holds − amount) must stay at or above ARGV[12], its floor or the least that keeps its minimum
-- share. In the same step as the liquidity rule, so concurrent bids are each checked against the hard holds of
-- the others; unprepared promises of other transfers do not count here (a requester who never prepares cannot
-- use them to make the router decline others).
if ARGV[12] ~= '' and dcmp(dadd(dadd(hard, amount), ARGV[12]), balance) > 0 then
  return {'InventoryBelowMinimum', balance, hard, ARGV[12], ''}
end
if dcmp(gasSending, ARGV[7]) < 0 or dcmp(gasReceiving, ARGV[8]) < 0 then
  return {'NotEnoughGas', gasSending, gasReceiving, '', ''}
end
if commit then
  -- Only bids already answered are merged into the staircase: the newest may still be withdrawn, so it is
  -- appended after.
  local bids = {}
  if ownHard == false then bids = staircase(ownEntries, wm) end
  if #bids >= maxBids then
    return {'AuctionRateExceeded', '', '', '', 'transfer-bids'}
  end
  bids[#bids + 1] = {amount, untilMs}
  writeRecord(h, tz, lz, member, false, bids, wm)
  if rateLimitMs > 0 then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', rateLimitMs)
  end
end
if claimKey then
  local t = redis.call('TIME')
  local leaseUntil = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[16]))
  local value = 'r|' .. ARGV[13] .. '|' .. leaseUntil .. '|' .. amount .. '|' .. ARGV[14] .. '|' .. ARGV[15]
  if claimed then
    redis.call('SET', claimKey, value, 'KEEPTTL')
  else
    redis.call('SET', claimKey, value, 'PX', ARGV[17])
  end
end
return {'ok', balance, hard, others, ''}
`;

/**
 * KEYS: hash, transfers zset, lapse-times zset. ARGV: member, untilMs, amountUsed, nowMs.
 * The sending prepare is in and verified: the transfer's promise becomes a hard hold of the amount it locked for
 * (never more than is promised now), until untilMs; an existing hold is only extended. 0 when there is no live
 * promise.
 */
const PIN_LUA = `${DIGIT_MATH_LUA}${PROMISES_LUA}
local h, tz, lz, member = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local wm = prune(h, tz, lz, tonumber(ARGV[4]))
local hard, entries = readRecord(h, member)
local promise = livePromise(entries, wm)
if promise == '0' then return 0 end
local untilMs = roundUp(tonumber(ARGV[2]))
if hard then
  if untilMs > entries[1][2] then writeRecord(h, tz, lz, member, true, {{promise, untilMs}}, wm) end
  return 1
end
writeRecord(h, tz, lz, member, true, {{dmin(ARGV[3], promise), untilMs}}, wm)
return 1
`;

/** KEYS: hash, transfers zset, lapse-times zset. ARGV: member, '1' to drop only a hard hold. */
const RELEASE_LUA = `${DIGIT_MATH_LUA}${PROMISES_LUA}
local h, tz, lz, member = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local wm = tonumber(redis.call('HGET', h, 'wm') or '0')
if ARGV[2] == '1' then
  local hard = readRecord(h, member)
  if hard ~= true then return 0 end
end
if drop(h, tz, lz, member, wm) then return 1 end
return 0
`;

/**
 * KEYS: hash, transfers zset, lapse-times zset. ARGV: member, amount, untilMs. Withdraws one unsigned bid,
 * leaving the transfer's others.
 */
const WITHDRAW_LUA = `${DIGIT_MATH_LUA}${PROMISES_LUA}
local h, tz, lz, member = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local wm = tonumber(redis.call('HGET', h, 'wm') or '0')
local hard, entries = readRecord(h, member)
if hard ~= false then return 0 end
local untilMs = roundUp(tonumber(ARGV[3]))
local left, found = {}, false
for _, b in ipairs(entries) do
  if not found and b[1] == ARGV[2] and b[2] == untilMs then found = true else left[#left + 1] = b end
end
if not found then return 0 end
writeRecord(h, tz, lz, member, false, left, wm)
return 1
`;

export type ReserveCode =
  | "ok"
  | "AuctionRateExceeded"
  | "StaleBalance"
  | "NotEnoughLiquidity"
  | "LiquidityUnavailable"
  | "InventoryBelowMinimum"
  | "NotEnoughGas"
  | "ClaimLost"
  | "RouterInCleanUpMode";

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
  readonly sendingChainId: number;
  readonly sendingAssetId: string;
  readonly receivingChainId: number;
  readonly receivingAssetId: string;
  /** `transferKey(transactionId, user)`: the rate limit's key too (nobody can set it for another person's transfer). */
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
  /**
   * The inventory rule: what the receiving (chain, asset) must still hold after this bid, net of hard holds
   * (shared/protocol/inventory.ts receivingKeep); undefined when its pool has no inventory targets.
   */
  readonly keep?: bigint;
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
  /** Every promise: hard holds plus unprepared bids (what lapsed since the last script still counts here). */
  readonly total: bigint;
  /** Transfers whose sending prepare the poller has seen, until their receiving prepare shows in the balance. */
  readonly hard: bigint;
  /** Per transfer, its largest unexpired signed bid, or its hard hold. */
  readonly byTransfer: ReadonlyMap<string, bigint>;
}

export interface BidReservations {
  reserve(params: ReserveParams): Promise<ReserveOutcome>;
  /**
   * The transfer's verified sending prepare is in: its promise becomes a hard hold of `amountUsed` (what the
   * receiving prepare will lock for it; never more than is promised now) until `untilMs`, or an existing hold is
   * extended. False when there is no live promise (never bid, released or lapsed).
   */
  pin(chainId: number, assetId: string, transferKey: string, untilMs: number, amountUsed: bigint): Promise<boolean>;
  /** Removes a transfer's promise, every bid of it or its hold; false when there was none. */
  release(chainId: number, assetId: string, transferKey: string): Promise<boolean>;
  /** Removes a transfer's hard hold (its sending side will not be honoured); false when it holds none. */
  unpin(chainId: number, assetId: string, transferKey: string): Promise<boolean>;
  /** Takes back the one bid `reserve` just recorded (it was never sent); the transfer's other bids stay. */
  withdraw(
    p: Pick<ReserveParams, "receivingChainId" | "receivingAssetId" | "transferKey" | "amount" | "untilMs">,
  ): Promise<boolean>;
  /** The promised total (what lapsed since the last script still counts here). */
  reservedTotal(chainId: number, assetId: string): Promise<bigint>;
  /** With `nowMs`, bids lapsed by then are left out of `byTransfer` even if no script has pruned them yet. */
  promises(chainId: number, assetId: string, nowMs?: number): Promise<Promises>;
}

export function createBidReservations(redis: Redis, prefix: string): BidReservations {
  const reserveScript = scriptRunner(redis, RESERVE_LUA);
  const pinScript = scriptRunner(redis, PIN_LUA);
  const releaseScript = scriptRunner(redis, RELEASE_LUA);
  const withdrawScript = scriptRunner(redis, WITHDRAW_LUA);
  const keysOf = (chainId: number, assetId: string): string[] => [
    bidReservationsKey(prefix, chainId, assetId),
    bidReservationExpiryKey(prefix, chainId, assetId),
    bidReservationLapseKey(prefix, chainId, assetId),
  ];
  return {
    reserve: async (p) => {
      const keys = [
        auctionRateKey(prefix, p.transferKey),
        routerBalanceKey(prefix, p.receivingChainId, p.receivingAssetId),
        gasBalanceKey(prefix, p.sendingChainId),
        gasBalanceKey(prefix, p.receivingChainId),
        ...keysOf(p.receivingChainId, p.receivingAssetId),
        cleanUpModeKey(prefix),
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
        p.keep === undefined ? "" : p.keep.toString(),
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
        amountUsed.toString(),
        String(Date.now()),
      ])) === 1,
    release: async (chainId, assetId, transferKey) =>
      (await releaseScript(keysOf(chainId, assetId), [transferKey.toLowerCase(), "0"])) === 1,
    unpin: async (chainId, assetId, transferKey) =>
      (await releaseScript(keysOf(chainId, assetId), [transferKey.toLowerCase(), "1"])) === 1,
    withdraw: async (p) =>
      (await withdrawScript(keysOf(p.receivingChainId, p.receivingAssetId), [
        p.transferKey.toLowerCase(),
        p.amount.toString(),
        String(p.untilMs),
      ])) === 1,
    reservedTotal: async (chainId, assetId) =>
      BigInt((await redis.hget(bidReservationsKey(prefix, chainId, assetId), "total")) ?? "0"),
    promises: async (chainId, assetId, nowMs) => {
      const fields = await redis.hgetall(bidReservationsKey(prefix, chainId, assetId));
      const wm = Math.max(Number(fields.wm ?? "0"), nowMs ?? 0);
      const byTransfer = new Map<string, bigint>();
      for (const [field, value] of Object.entries(fields)) {
        if (!field.startsWith("p:")) continue;
        let best = 0n;
        for (const [, amount, untilMs] of value.matchAll(/(\d+)@(\d+)/g)) {
          if (Number(untilMs) > wm && BigInt(amount) > best) best = BigInt(amount);
        }
        if (best > 0n) byTransfer.set(field.slice(2), best);
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
        why === "transfer-prepared" ? "; the transfer's sending side is already prepared with another bid" : "";
      return `balance ${a}, hard holds ${b}, unprepared bids of other transfers ${c}${rule}`;
    }
    case "InventoryBelowMinimum":
      return `balance ${a}, hard holds ${b}: the bid would leave less than ${c}, the receiving chain's floor or minimum share`;
    case "AuctionRateExceeded":
      return why === "transfer-bids"
        ? `the transfer already holds ${MAX_BIDS_PER_TRANSFER} open bids`
        : "a bid for the same transfer was signed less than requestLimit ago";
    case "NotEnoughGas":
      return `signer gas: sending chain ${a}, receiving chain ${b}`;
    case "ClaimLost":
      return "another auction instance took this request over (this one missed its claim's lease)";
    case "RouterInCleanUpMode":
      return "clean-up mode is switched on in Redis (npm run drain): the router finishes open transfers and takes no new ones";
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

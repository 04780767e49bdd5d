-- The promise records of one receiving (chain, asset), shared by the bid-* scripts (the policy:
-- shared/transfers/bid-reservations.ts and docs/auction.md, "Promises"). Every lapse time is rounded up to
-- LAPSE_STEP_MS. In the hash:
-- - `total`: every promise not lapsed by `wm`; `hard`: the hard holds among them; unprepared = total - hard;
-- - `wm`: the time of the last prune (ms, never moves back): a bid or hold lapsing at or before it is gone;
-- - `b:<ms>`: what stops counting at that time (`k:<ms>`: its hard part). A transfer whose bids are a staircase
--   (amounts falling as lapse times rise: its promise is the largest live one) adds each step's drop to the sum
--   of that step's time, so at any time the live sums add up to exactly the largest live bid of each transfer;
-- - `p:<transferKey>`: the transfer's bids as `amount@untilMs,...`, or its hard hold as `h:amount@untilMs`.
-- Zsets: the lapse times with a sum (`lz`), and the transfers by their last lapse time (`tz`).
-- A prune subtracts every sum whose time has come: at most one per step of the longest promise, never a number
-- that grows with the promises open or lapsed.
--- @include "digit-math"

-- The step lapse times are rounded up to (ms): LAPSE_STEP_MS of bid-reservations.ts, which its test compares.
local LAPSE_STEP_MS = 10000
-- Records of transfers with nothing left to count that one prune forgets (memory only: a lapsed promise stops
-- counting through its lapse-time sum, whatever is left of its record). Each reserve adds at most one, so a few
-- per call keep up.
local FORGET_PER_CALL = 4
local function fadd(h, f, v)
  if v == '0' then return end
  redis.call('HSET', h, f, dadd(redis.call('HGET', h, f) or '0', v))
end
local function fsub(h, f, v)
  if v == '0' then return end
  redis.call('HSET', h, f, dsub(redis.call('HGET', h, f) or '0', v))
end
local function fmt(ms) return string.format('%.0f', ms) end
local function roundUp(ms) return math.ceil(ms / LAPSE_STEP_MS) * LAPSE_STEP_MS end
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
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', tz, '-inf', wm, 'LIMIT', 0, FORGET_PER_CALL)) do
    redis.call('HDEL', h, 'p:' .. member)
    redis.call('ZREM', tz, member)
  end
  return wm
end
local function dmin(a, b)
  if dcmp(a, b) <= 0 then return a end
  return b
end

--[[
  Removes a transfer's promise, every bid of it or its hard hold (shared/transfers/bid-reservations.ts release
  and unpin).

  KEYS[1]  promises     the receiving (chain, asset) promise records (bidReservationsKey; includes/promises.lua)
  KEYS[2]  transfers    zset of transfers by their last lapse time (bidReservationExpiryKey)
  KEYS[3]  lapseTimes   zset of lapse times with a sum (bidReservationLapseKey)

  ARGV[1]  member       the transfer (transferKey, lowercase)
  ARGV[2]  hardOnly     '1': remove it only when it is a hard hold (unpin); '0': whatever it is

  Returns 1 when a live promise was removed, else 0.

  Atomic because the record and the lapse-time sums change together: a reserve in between would count the
  removed promise in the sums but not in the record, or the other way round.
]]
--- @include "promises"

local h, tz, lz, member = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local wm = tonumber(redis.call('HGET', h, 'wm') or '0')
if ARGV[2] == '1' then
  local hard = readRecord(h, member)
  if hard ~= true then return 0 end
end
if drop(h, tz, lz, member, wm) then return 1 end
return 0

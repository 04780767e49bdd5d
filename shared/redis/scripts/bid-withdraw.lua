--[[
  Takes back one bid the auction recorded but never sent (shared/transfers/bid-reservations.ts withdraw); the
  transfer's other bids stay.

  KEYS[1]  promises     the receiving (chain, asset) promise records (bidReservationsKey; includes/promises.lua)
  KEYS[2]  transfers    zset of transfers by their last lapse time (bidReservationExpiryKey)
  KEYS[3]  lapseTimes   zset of lapse times with a sum (bidReservationLapseKey)

  ARGV[1]  member       the transfer (transferKey, lowercase)
  ARGV[2]  amount       the bid's amount (decimal string), as reserved
  ARGV[3]  untilMs      the bid's untilMs, as reserved

  Returns 1 when the bid was found and removed, else 0 (already lapsed, pinned or released).

  Atomic because the record and the lapse-time sums change together (see bid-release.lua).
]]
--- @include "promises"

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

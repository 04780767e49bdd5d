--[[
  The transfer's sending prepare is in and verified: its promise becomes a hard hold of the amount it locked for
  (never more than is promised now), until untilMs; an existing hold is only extended
  (shared/transfers/bid-reservations.ts pin).

  KEYS[1]  promises     the receiving (chain, asset) promise records (bidReservationsKey; includes/promises.lua)
  KEYS[2]  transfers    zset of transfers by their last lapse time (bidReservationExpiryKey)
  KEYS[3]  lapseTimes   zset of lapse times with a sum (bidReservationLapseKey)

  ARGV[1]  member       the transfer (transferKey, lowercase)
  ARGV[2]  untilMs      when the hold lapses
  ARGV[3]  amountUsed   what the receiving prepare will lock for it (decimal string)
  ARGV[4]  nowMs        the caller's clock (ms): lapsed promises are pruned first

  Returns 1 when the promise is (now) a hold, 0 when there is no live promise.

  Atomic because the promise read and the hold written must be the same state the auction's reserve sees: no
  bid may be promised against liquidity this hold already takes, and the sums stay equal to the records.
]]
--- @include "promises"

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

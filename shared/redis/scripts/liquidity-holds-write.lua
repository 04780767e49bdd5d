--[[
  One change of a signer's liquidity holds (services/submitter/liquidity-in-flight.ts): compare-and-set on the
  hash's `version` token, fenced by the sender lease.

  KEYS[1]  holds         the holds hash of one (chain, signer) (liquidityHoldsKey)
  KEYS[2]  lease         the sender lease key (the holds key itself when unfenced)
  KEYS[3]  guard         a key that must not exist when `guardMode` is 'absent' (a job's transaction record)

  ARGV[1]  fenceValue    the sender lease value the writer holds ('' = unfenced)
  ARGV[2]  expected      the version token the writer's mirror has
  ARGV[3]  version       the new token
  ARGV[4]  ttlMs         the hash's time to live, refreshed by every write
  ARGV[5]  guardMode     'absent': refuse if KEYS[3] exists; '': no guard
  ARGV[6]  droppedBelow  the new `dropped-below` block ('' = unchanged)
  ARGV[7]  setCount      the number of holds to set
  ARGV[8..] holds        setCount field/value pairs (jobId, hold JSON), then the jobIds to delete

  Returns 1 when written, -1 on a version conflict, -2 when the fence refused the write, -3 when the guard
  refused it.

  Atomic because the version check, the guard, the fence and the change must be one step: two checks must never
  both pass against the same balance, and a deposed holder must write nothing. The field names `version` and
  `dropped-below` are VERSION and DROPPED_BELOW of liquidity-in-flight.ts.
]]
--- @include "fence-check"

local holdsKey, guardKey = KEYS[1], KEYS[3]
if not fenceHolds(KEYS[2], ARGV[1]) then return -2 end
if (redis.call('HGET', holdsKey, 'version') or '') ~= ARGV[2] then return -1 end
if ARGV[5] == 'absent' and redis.call('EXISTS', guardKey) == 1 then return -3 end
if ARGV[6] ~= '' then redis.call('HSET', holdsKey, 'dropped-below', ARGV[6]) end
local i = 8
for _ = 1, tonumber(ARGV[7]) do
  redis.call('HSET', holdsKey, ARGV[i], ARGV[i + 1])
  i = i + 2
end
while i <= #ARGV do
  redis.call('HDEL', holdsKey, ARGV[i])
  i = i + 1
end
redis.call('HSET', holdsKey, 'version', ARGV[3])
redis.call('PEXPIRE', holdsKey, ARGV[4])
return 1

--[[
  One change of a fenced versioned hash (services/submitter/fenced-versioned-hash.ts; the liquidity holds of
  liquidity-in-flight.ts): compare-and-set on the hash's `version` token, fenced by the sender lease.

  KEYS[1]  hash            the hash (for the holds: liquidityHoldsKey of one (chain, signer))
  KEYS[2]  lease           the sender lease key (the hash key itself when unfenced)
  KEYS[3]  guard           a key that must not exist when `guardMode` is 'absent' (a job's transaction record)

  ARGV[1]  fenceValue      the sender lease value the writer holds ('' = unfenced)
  ARGV[2]  expected        the version token the writer's mirror has
  ARGV[3]  version         the new token
  ARGV[4]  ttlMs           the hash's time to live, refreshed by every write
  ARGV[5]  guardMode       'absent': refuse if KEYS[3] exists; '': no guard
  ARGV[6]  watermarkField  the field of the watermark (for the holds: 'dropped-below')
  ARGV[7]  watermark       the new watermark ('' = unchanged)
  ARGV[8]  setCount        the number of entries to set
  ARGV[9..] entries        setCount field/value pairs (entry id, entry JSON), then the entry ids to delete

  Returns 1 when written, -1 on a version conflict, -2 when the fence refused the write, -3 when the guard
  refused it.

  Atomic because the version check, the guard, the fence and the change must be one step: two holds decided
  against the same state must never both be written, and a deposed holder must write nothing. The field name
  `version` is VERSION of fenced-versioned-hash.ts.
]]
--- @include "fence-check"

local hashKey, guardKey = KEYS[1], KEYS[3]
if not fenceHolds(KEYS[2], ARGV[1]) then return -2 end
if (redis.call('HGET', hashKey, 'version') or '') ~= ARGV[2] then return -1 end
if ARGV[5] == 'absent' and redis.call('EXISTS', guardKey) == 1 then return -3 end
if ARGV[7] ~= '' then redis.call('HSET', hashKey, ARGV[6], ARGV[7]) end
local i = 9
for _ = 1, tonumber(ARGV[8]) do
  redis.call('HSET', hashKey, ARGV[i], ARGV[i + 1])
  i = i + 2
end
while i <= #ARGV do
  redis.call('HDEL', hashKey, ARGV[i])
  i = i + 1
end
redis.call('HSET', hashKey, 'version', ARGV[3])
redis.call('PEXPIRE', hashKey, ARGV[4])
return 1

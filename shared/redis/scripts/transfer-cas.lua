--[[
  Compare-and-set of a transfer record plus its open-index entry (shared/transfers/transfer-store.ts put). A
  script rather than WATCH/MULTI: it is just as atomic, and WATCH is per connection, which a client shared with
  BullMQ and other callers cannot promise.

  KEYS[1]  record       the record (transferRecordKey): JSON
  KEYS[2]  open         the chain's open index (openTransfersKey): zset of Prepared transfers by expiry
  KEYS[3]  lease        the writer's lease key (the record itself when unfenced)

  ARGV[1]  expected     the JSON the writer read ('' = absent)
  ARGV[2]  json         the new JSON
  ARGV[3]  open         '1': the record is Prepared (kept for good, indexed); '0': closed (expires, unindexed)
  ARGV[4]  score        its expiry (the index's score)
  ARGV[5]  member       its transferKey (the index's member)
  ARGV[6]  fenceValue   the lease value the writer holds ('' = unfenced)
  ARGV[7]  closedTtlMs  how long a closed record is kept

  Returns 1 when written, 0 when the record changed since it was read (the writer merges again), -1 when the
  fence refused the write.

  Atomic because the comparison, the record and its index entry must change as one: a concurrent writer's
  record must never be overwritten unseen, and the index must never name a closed record or miss an open one.
]]
--- @include "fence-check"

local recordKey, openKey, leaseKey = KEYS[1], KEYS[2], KEYS[3]
local expected, json, open, score, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if not fenceHolds(leaseKey, ARGV[6]) then return -1 end
local current = redis.call('GET', recordKey)
if current == false then current = '' end
if current ~= expected then return 0 end
if open == '1' then
  redis.call('SET', recordKey, json)
  redis.call('ZADD', openKey, score, member)
else
  redis.call('SET', recordKey, json, 'PX', ARGV[7])
  redis.call('ZREM', openKey, member)
end
return 1

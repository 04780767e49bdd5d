--[[
  Moves a `reverted` transaction record aside, so the job's next run builds a new transaction
  (services/submitter/send/tx-record.ts archiveReverted). RENAME keeps the TTL the record got when it was saved
  reverted; ARGV[1] only covers a record that has none.

  KEYS[1]  record       the job's record hash (txRecordKey)
  KEYS[2]  archive      where it goes (`<jobId>-reverted-<version>`)
  KEYS[3]  lease        the sender lease key (the record itself when unfenced)

  ARGV[1]  ttlMs        the archive's TTL when the record had none
  ARGV[2]  fenceValue   the sender lease value the writer holds ('' = unfenced)

  Returns 1 when moved, 0 when there is no record or it is not reverted, -2 when the fence refused the write.

  Atomic because the status check and the RENAME must be one step: a record changed in between (a new attempt
  saved) must be left alone.
]]
--- @include "fence-check"

if not fenceHolds(KEYS[3], ARGV[2]) then return -2 end
local json = redis.call('HGET', KEYS[1], 'record')
if not json then return 0 end
if cjson.decode(json).status ~= 'reverted' then return 0 end
redis.call('RENAME', KEYS[1], KEYS[2])
if redis.call('PTTL', KEYS[2]) < 0 then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
return 1

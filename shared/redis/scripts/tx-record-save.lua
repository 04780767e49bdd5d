--[[
  Compare-and-set of a job's transaction record on its `version` field, with the nonce-jobs index entry of its
  nonce (services/submitter/send/tx-record.ts save).

  KEYS[1]  record       the record hash {version, record} (txRecordKey)
  KEYS[2]  lease        the sender lease key (the record itself when unfenced)
  KEYS[3]  nonceJobs    the signer's nonce → job index (nonceJobsKey)

  ARGV[1]  expected     the version the writer read (0 = no record yet)
  ARGV[2]  version      the new version
  ARGV[3]  json         the new record
  ARGV[4]  ttlMs        how long it is kept (0 = for good: PERSIST)
  ARGV[5]  fenceValue   the sender lease value the writer holds ('' = unfenced)
  ARGV[6]  nonce        the record's nonce (-1: none yet, the index is left alone)
  ARGV[7]  jobId        the job the index names at that nonce

  Returns -1 when written, -2 when the fence refused the write, else the version found (0 = no record).

  Atomic because the version check, the record, its TTL and its index entry must change together: a second
  processor of the job must never overwrite a record unseen, nor a deposed sender write one at all.
]]
--- @include "fence-check"

local recordKey, nonceJobsKey = KEYS[1], KEYS[3]
if not fenceHolds(KEYS[2], ARGV[5]) then return -2 end
local current = tonumber(redis.call('HGET', recordKey, 'version') or '0')
if current ~= tonumber(ARGV[1]) then return current end
redis.call('HSET', recordKey, 'version', ARGV[2], 'record', ARGV[3])
if tonumber(ARGV[4]) > 0 then
  redis.call('PEXPIRE', recordKey, ARGV[4])
else
  redis.call('PERSIST', recordKey)
end
if tonumber(ARGV[6]) >= 0 then redis.call('HSET', nonceJobsKey, ARGV[6], ARGV[7]) end
return -1

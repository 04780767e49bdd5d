--[[
  Run once by a new sender lease holder before its worker starts (services/submitter/lease/release-orphaned-jobs.ts):
  every job still active in the queue belongs to a previous holder, so its BullMQ lock is dropped and the job is
  marked stalled; the worker's first stalled check puts it back at the head of the queue. Touches BullMQ's own
  keys (the layout of BullMQ 6).

  KEYS[1]  lease          the sender lease key
  KEYS[2]  active         the queue's active list
  KEYS[3]  stalled        the queue's stalled set
  KEYS[4]  stalledCheck   the queue's stalled-check key (deleted: the next check runs at once)

  ARGV[1]  fenceValue     the sender lease value the new holder took
  ARGV[2]  queuePrefix    the queue's key prefix (`<prefix>:<queue>:`): a job's lock is `<queuePrefix><id>:lock`

  Returns the number of jobs released, -1 when the fence no longer holds (nothing was touched).

  Atomic because the fence check and the release must be one step: a holder deposed in between must not
  release the jobs of the next one.
]]

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local active = redis.call('LRANGE', KEYS[2], 0, -1)
for _, id in ipairs(active) do
  redis.call('DEL', ARGV[2] .. id .. ':lock')
  redis.call('SADD', KEYS[3], id)
end
redis.call('DEL', KEYS[4])
return #active

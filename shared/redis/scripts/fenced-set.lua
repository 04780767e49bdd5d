--[[
  SET of a value a lease holder owns, unless its lease moved on: the chain head (shared/transfers/transfer-store.ts
  setHead) and the logs source's cursor (services/poller/sources/log-cursor.ts), both under the poller lease.

  KEYS[1]  target       the key to set
  KEYS[2]  lease        the writer's lease key (the target itself when unfenced)

  ARGV[1]  value        what to set
  ARGV[2]  fenceValue   the lease value the writer holds ('' = unfenced)

  Returns 1 when set, 0 when the fence refused it.

  Atomic because the fence check and the write must be one step: a poller paused past its lease between them
  would move the head or the cursor back under the active one.
]]
--- @include "fence-check"

if not fenceHolds(KEYS[2], ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1

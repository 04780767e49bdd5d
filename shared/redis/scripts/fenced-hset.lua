--[[
  HSET of fields a lease holder owns, unless its lease moved on: the balances the poller refreshes
  (shared/transfers/balance-store.ts).

  KEYS[1]  target       the hash to write
  KEYS[2]  lease        the writer's lease key (the target itself when unfenced)

  ARGV[1]  fenceValue   the lease value the writer holds ('' = unfenced)
  ARGV[2..] fields      field, value, field, value, ...

  Returns 1 when written, 0 when the fence refused it.

  Atomic because the fence check and the write must be one step (a paused poller must not overwrite a newer
  balance with an old one), and the fields change together (a reader never sees a new amount with an old time).
]]
--- @include "fence-check"

if not fenceHolds(KEYS[2], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 1

--[[
  Extends a fenced lease while it is still the caller's (shared/coordination/lease.ts renew).

  KEYS[1]  lease        the lease key

  ARGV[1]  fenceValue   the value the holder took it with (`<term>|<ownerId>`)
  ARGV[2]  ttlMs        the new time to live

  Returns 1 when renewed, 0 when the lease lapsed or another owner took it.

  Atomic because the comparison and the PEXPIRE must be one step: a lease taken over in between must not get
  the old holder's extension.
]]

if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0

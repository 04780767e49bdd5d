-- The fence of a lease-holder's write (shared/coordination/lease.ts): the lease key still holds the writer's value
-- (`<term>|<ownerId>`). A holder that paused past its TTL finds another value there (or none) and writes
-- nothing. An empty value means "not fenced" (stores used outside a lease holder: the admin API, tests, tools).
local function fenceHolds(leaseKey, fenceValue)
  return fenceValue == '' or redis.call('GET', leaseKey) == fenceValue
end

--[[
  Replaces a key's value only while it still holds the one the caller judged: an admin content claim taken over
  from a request that failed with nothing on chain (services/admin/operations/content-claim.ts).

  KEYS[1]  target     the key

  ARGV[1]  expected   the value it must hold
  ARGV[2]  value      the new value
  ARGV[3]  ttlMs      the new value's time to live

  Returns 1 when replaced, 0 when it held something else or nothing.

  Atomic because the comparison and the SET must be one step: a claim that changed in between (another
  request took it) must not be overwritten.
]]

if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0

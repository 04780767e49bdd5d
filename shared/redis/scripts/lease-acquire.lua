--[[
  Takes a fenced lease if it is free, or extends it when it is already this owner's (shared/coordination/lease.ts
  tryAcquire), and names the Redis server that granted it (lease-resume.lua compares it).

  KEYS[1]  lease     the lease key: `<term>|<ownerId>`
  KEYS[2]  term      the term counter (INCR, never expires: a term is never handed out twice)

  ARGV[1]  ownerId   this process's identity
  ARGV[2]  ttlMs     the lease's time to live

  Returns {term, server}: the term when the lease is (now) this owner's, -1 when another owner holds it; the
  server's identity (includes/server-identity.lua).

  Atomic because the read, the new term and the SET must be one step: two processes finding the lease free
  must not both take it; and the server named must be the one that granted the term.
]]
--- @include "server-identity"

local v = redis.call('GET', KEYS[1])
if v then
  local sep = string.find(v, '|', 1, true)
  if sep and string.sub(v, sep + 1) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {tonumber(string.sub(v, 1, sep - 1)), serverIdentity()}
  end
  return {-1, ''}
end
local term = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], term .. '|' .. ARGV[1], 'PX', ARGV[2])
return {term, serverIdentity()}

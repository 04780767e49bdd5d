--[[
  Sets a holder's lapsed lease again, in the same term, when nothing can have happened meanwhile
  (shared/coordination/lease.ts resume): nobody took the lease and the Redis server is the one that granted the
  term, so every write made under the term is still there and the term can go on without a new begin.

  KEYS[1]  lease        the lease key
  KEYS[2]  term         the term counter

  ARGV[1]  fenceValue   the value the holder took it with (`<term>|<ownerId>`)
  ARGV[2]  term         the holder's term
  ARGV[3]  server       the identity of the server that granted the term (lease-acquire.lua)
  ARGV[4]  ttlMs        the new time to live

  Returns 1 when resumed; 0 when another owner holds the lease; -1 when the term counter moved (a term was taken
  and given up meanwhile); -2 when the server is another one, or restarted, since the term began (a failover or a
  restart may have lost the term's writes: only a new term's begin is safe then). Nothing is written unless 1.

  Atomic because the three checks and the SET must be one step: a standby taking the lease in between must not be
  overwritten.
]]
--- @include "server-identity"

local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -1 end
if serverIdentity() ~= ARGV[3] then return -2 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
return 1

--[[
  Sets the stored next nonce of one (chain, signer) only if it is still what the caller read
  (services/submitter/send/nonce-store.ts resetIfUnchanged).

  KEYS[1]  nonce        the next nonce (nonceKey)
  KEYS[2]  lease        the sender lease key (the nonce key itself when unfenced)

  ARGV[1]  expected     the value the caller read
  ARGV[2]  to           the new value
  ARGV[3]  fenceValue   the sender lease value the writer holds ('' = unfenced)

  Returns 1 when set, 0 when someone moved it meanwhile, -2 when the fence refused the write.

  Atomic because the comparison, the SET and the fence check must be one step: a nonce advanced in between by
  a send must not be reset under it.
]]
--- @include "fence-check"

if not fenceHolds(KEYS[2], ARGV[3]) then return -2 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
return 0

--[[
  Raises the stored next nonce of one (chain, signer); never lowers it: a late writer must not undo a newer
  send (services/submitter/send/nonce-store.ts advanceTo).

  KEYS[1]  nonce        the next nonce (nonceKey)
  KEYS[2]  lease        the sender lease key (the nonce key itself when unfenced)

  ARGV[1]  next         the nonce after the one just used
  ARGV[2]  fenceValue   the sender lease value the writer holds ('' = unfenced)

  Returns 1 when raised, 0 when the stored one was already as high, -2 when the fence refused the write.

  Atomic because the comparison and the SET must be one step (two writers must not lower it between them), and
  the fence check with them (a deposed sender writes nothing).
]]
--- @include "fence-check"

if not fenceHolds(KEYS[2], ARGV[2]) then return -2 end
local current = tonumber(redis.call('GET', KEYS[1]) or '-1')
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0

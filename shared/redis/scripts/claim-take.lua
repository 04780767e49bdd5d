--[[
  An auction instance claims a request explicitly, before a wait (services/auction/request-claims.ts claim; the
  owner's normal path claims in bid-reserve.lua instead).

  KEYS[1]  claim     the request's claim (auctionClaimKey; includes/claim-value.lua)

  ARGV[1]  token     this owner's fencing token
  ARGV[2]  leaseMs   the lease of a new claim
  ARGV[3]  keepMs    how long the key stays

  Returns 1 when the claim is (now) this token's, in state c or r; 0 when another owner holds it or it is settled.

  Atomic because create-if-absent and the read of an existing claim must see the same value: otherwise a claim
  taken over in between would read as this owner's.
]]
--- @include "claim-value"

local key, token = KEYS[1], ARGV[1]
if redis.call('SET', key, claimEncode('c', token, claimNowMs() + tonumber(ARGV[2]), ''), 'NX', 'PX', ARGV[3]) then
  return 1
end
local claim = claimDecode(redis.call('GET', key))
if claim and claim.state and claim.token == token then return 1 end
return 0

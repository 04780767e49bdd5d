--[[
  Renews the leases of requests an auction instance is still working on (services/auction/request-claims.ts
  renew).

  KEYS[1..n]   claims            the requests' claims (auctionClaimKey; includes/claim-value.lua)

  ARGV[1]      leaseMs           the new lease of a claim in state c
  ARGV[2]      reservedLeaseMs   the new lease of a claim in state r
  ARGV[3..n+2] tokens            this owner's token of each claim, in KEYS order

  Returns one entry per claim: 1 when renewed, 0 when the claim is no longer this token's.

  Atomic because the token check and the renewal must see the same value: a claim taken over in between must
  not get the old owner's lease.
]]
--- @include "claim-value"

local now = claimNowMs()
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = 0
  local claim = claimDecode(redis.call('GET', key))
  if claim and claim.state and claim.token == ARGV[i + 2] then
    local ms = ARGV[1]
    if claim.state == 'r' then ms = ARGV[2] end
    redis.call('SET', key, claimEncode(claim.state, claim.token, now + tonumber(ms), claim.bid), 'KEEPTTL')
    out[i] = 1
  end
end
return out
